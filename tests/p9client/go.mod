module ninefold/tests/p9client

go 1.19

require github.com/hugelgupf/p9 v0.2.0

require (
	github.com/u-root/uio v0.0.0-20210528114334-82958018845c // indirect
	golang.org/x/sys v0.0.0-20210525143221-35b2ab0089ea // indirect
)
