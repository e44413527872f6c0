from . import GlobalArray

def matmul(a: GlobalArray, b: GlobalArray, c: GlobalArray, block: int | None = None) -> None:
    """c = a @ b for 2-D global arrays (collective)."""
