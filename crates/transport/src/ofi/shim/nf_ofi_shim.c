/*
 * nf_ofi_shim: the few libfabric calls ninefold's ofi transport needs, as plain
 * exported functions.
 *
 * Most of libfabric's API (fi_domain, fi_endpoint, fi_send, fi_cq_read, ...) is
 * `static inline` in the headers, so it cannot be called from Rust through a symbol.
 * This file is compiled by build.rs into its own shared object, linked against
 * -lfabric, and dlopen'ed by src/ofi/ffi.rs. Keep it a thin, checked layer: no policy,
 * no threads; every index is bounds-checked; errors are negative fi_errno values and
 * the failing step is written into the caller's text buffer.
 *
 * Object layout of one endpoint (struct nf_ep):
 *   fabric -> domain -> { cq, av, ep (RDM) } plus two buffer pools:
 *   rx pool: rx_count buffers of buf_size bytes, each posted with fi_recv and its own
 *            fi_context2 (rx_ctx[i]), so a completion's op_context names the buffer;
 *   tx pool: tx_count slots of buf_size bytes, filled by the caller; a slot's context
 *            (tx_ctx[i]) also serves RMA operations issued "in" that slot, and the
 *            slot keeps the temporary registrations of such an operation's local
 *            memory (tx_tmp[i], only where the provider wants FI_MR_LOCAL) until its
 *            completion is read.
 * With want_wait the completion queue has a wait object (an fd): a thread can sleep on
 * it while nothing happens, after nf_ofi_trywait says it may.
 */
#include <errno.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#if FI_MAJOR_VERSION < 1 || (FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION < 9)
#error "nf_ofi_shim needs libfabric >= 1.9"
#endif

/* Bump when any struct or signature below changes; ffi.rs checks it. */
#define NF_OFI_ABI 2

/* Most local or remote pieces of one RMA operation (the caller keeps to the
 * provider's iov_limit and rma_iov_limit, which are at most this here). */
#define NF_MAX_IOV 8

#define NF_EXPORT __attribute__((visibility("default")))

enum { NF_RX = 0, NF_TX = 1, NF_OTHER = 2 };

/* What open needs (mirrored by ffi.rs). */
struct nf_open_args {
	const char *provider; /* fabric_attr->prov_name, e.g. "tcp" */
	const char *node;     /* source address to bind, or NULL */
	const char *domain;   /* domain (interface) name, or NULL */
	uint64_t rx_count;    /* receive buffers to post */
	uint64_t tx_count;    /* send slots */
	uint64_t buf_size;    /* bytes per buffer and per slot */
	uint64_t npeers;      /* ranks in the job */
	int32_t want_rma;     /* ask for FI_RMA (falls back to messaging only) */
	int32_t want_wait;    /* a completion queue with an fd to sleep on */
};

/* What the caller may know about an open endpoint (mirrored by ffi.rs). */
struct nf_ep_info {
	uint8_t *rx_base;
	uint8_t *tx_base;
	uint64_t buf_size;
	uint64_t inject_size;
	uint64_t mr_mode;
	uint64_t max_msg_size;
	int32_t rma;
	int32_t wait_fd;        /* -1 without a wait object */
	uint64_t msg_order;     /* FI_ORDER_* the provider keeps */
	uint64_t iov_limit;     /* local pieces per RMA operation (<= NF_MAX_IOV) */
	uint64_t rma_iov_limit; /* remote pieces per RMA operation (<= NF_MAX_IOV) */
	char provider[64];
	char fabric[64];
	char domain[64];
};

/* One completion (mirrored by ffi.rs). */
struct nf_completion {
	uint32_t kind; /* NF_RX, NF_TX or NF_OTHER */
	uint32_t idx;  /* buffer or slot index */
	uint64_t len;  /* bytes received (rx) */
	int32_t err;   /* 0, or a positive fi_errno for an error completion */
	int32_t prov_errno;
};

struct nf_mr {
	struct fid_mr *mr;
	uint8_t *buf;
	uint64_t len;
	int ext; /* the caller's memory: not ours to free */
};

/* One local piece of an RMA operation (mirrored by ffi.rs). */
struct nf_iov {
	uint8_t *buf;
	uint64_t len;
};

/* One remote piece: address as the target's registration names it, and its key. */
struct nf_riov {
	uint64_t addr;
	uint64_t len;
	uint64_t key;
};

/* Temporary registrations of one slot's RMA operation. */
struct nf_tmp {
	struct fid_mr *mr[NF_MAX_IOV];
};

struct nf_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	int rma;
	uint64_t next_key;

	uint64_t rx_count, tx_count, buf_size;
	uint8_t *rx_mem, *tx_mem;
	struct fid_mr *rx_mr, *tx_mr;
	void *rx_desc, *tx_desc;
	struct fi_context2 *rx_ctx, *tx_ctx;
	struct nf_tmp *tx_tmp;
	int wait_fd;

	uint64_t npeers;
	fi_addr_t *peers;

	char errtext[256];
};

static void say(char *err, size_t errlen, const char *what, int ret)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", what, fi_strerror(ret < 0 ? -ret : ret));
}

static void close_fid(struct fid *f)
{
	if (f)
		fi_close(f);
}

NF_EXPORT int nf_ofi_abi(void) { return NF_OFI_ABI; }

NF_EXPORT const char *nf_ofi_strerror(int err) { return fi_strerror(err < 0 ? -err : err); }

NF_EXPORT uint32_t nf_ofi_version(void) { return fi_version(); }

NF_EXPORT void nf_ofi_close(struct nf_ep *e)
{
	if (!e)
		return;
	close_fid(e->rx_mr ? &e->rx_mr->fid : NULL);
	close_fid(e->tx_mr ? &e->tx_mr->fid : NULL);
	close_fid(e->ep ? &e->ep->fid : NULL);
	close_fid(e->av ? &e->av->fid : NULL);
	close_fid(e->cq ? &e->cq->fid : NULL);
	close_fid(e->domain ? &e->domain->fid : NULL);
	close_fid(e->fabric ? &e->fabric->fid : NULL);
	if (e->info)
		fi_freeinfo(e->info);
	free(e->rx_mem);
	free(e->tx_mem);
	if (e->tx_tmp)
		for (uint64_t i = 0; i < e->tx_count; i++)
			for (int j = 0; j < NF_MAX_IOV; j++)
				close_fid(e->tx_tmp[i].mr[j] ? &e->tx_tmp[i].mr[j]->fid : NULL);
	free(e->rx_ctx);
	free(e->tx_ctx);
	free(e->tx_tmp);
	free(e->peers);
	free(e);
}

static int get_info(const struct nf_open_args *a, int rma, struct fi_info **out)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_SEND | FI_RECV;
	if (rma)
		hints->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(a->provider);
	if (a->domain)
		hints->domain_attr->name = strdup(a->domain);
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), a->node, NULL,
			 a->node ? FI_SOURCE : 0, hints, out);
	fi_freeinfo(hints);
	return ret;
}

/* Registers [buf, buf+len) when the provider needs it; *mr stays NULL otherwise. */
static int reg(struct nf_ep *e, void *buf, uint64_t len, uint64_t access, int always,
	       struct fid_mr **mr, void **desc)
{
	int ret;

	*mr = NULL;
	*desc = NULL;
	if (!always && !(e->info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(e->domain, buf, len, access, 0, e->next_key++, 0, mr, NULL);
	if (ret)
		return ret;
	if (e->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(*mr, &e->ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(*mr);
		if (ret) {
			fi_close(&(*mr)->fid);
			*mr = NULL;
			return ret;
		}
	}
	*desc = fi_mr_desc(*mr);
	return 0;
}

static void *pool(uint64_t count, uint64_t size)
{
	void *p = NULL;
	uint64_t total = count * size;

	if (size && total / size != count)
		return NULL;
	total = (total + 4095) & ~(uint64_t)4095;
	if (posix_memalign(&p, 4096, total ? total : 4096))
		return NULL;
	memset(p, 0, total ? total : 4096);
	return p;
}

NF_EXPORT int nf_ofi_open(const struct nf_open_args *a, struct nf_ep **out, char *err,
			  size_t errlen)
{
	struct fi_cq_attr cq_attr = {0};
	struct fi_av_attr av_attr = {0};
	struct nf_ep *e;
	int ret;

	*out = NULL;
	if (!a || !a->provider || !a->rx_count || !a->tx_count || !a->buf_size ||
	    !a->npeers || a->rx_count > UINT32_MAX || a->tx_count > UINT32_MAX) {
		say(err, errlen, "nf_ofi_open arguments", -FI_EINVAL);
		return -FI_EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->next_key = 1;
	e->rx_count = a->rx_count;
	e->tx_count = a->tx_count;
	e->buf_size = a->buf_size;
	e->npeers = a->npeers;

	e->rma = 0;
	ret = -FI_ENODATA;
	if (a->want_rma) {
		ret = get_info(a, 1, &e->info);
		e->rma = ret == 0;
	}
	if (ret)
		ret = get_info(a, 0, &e->info);
	if (ret) {
		say(err, errlen, "fi_getinfo (FI_EP_RDM, FI_MSG)", ret);
		goto fail;
	}
	if (a->rx_count > e->info->rx_attr->size || a->tx_count > e->info->tx_attr->size) {
		snprintf(err, errlen,
			 "provider queues too small: rx %zu, tx %zu entries, asked for %llu "
			 "receive buffers and %llu send slots",
			 e->info->rx_attr->size, e->info->tx_attr->size,
			 (unsigned long long)a->rx_count, (unsigned long long)a->tx_count);
		ret = -FI_EINVAL;
		goto fail;
	}
	ret = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
	if (ret) {
		say(err, errlen, "fi_fabric", ret);
		goto fail;
	}
	ret = fi_domain(e->fabric, e->info, &e->domain, NULL);
	if (ret) {
		say(err, errlen, "fi_domain", ret);
		goto fail;
	}
	cq_attr.format = FI_CQ_FORMAT_MSG;
	cq_attr.size = a->rx_count + a->tx_count + 64;
	e->wait_fd = -1;
	ret = -FI_ENOSYS;
	if (a->want_wait) {
		cq_attr.wait_obj = FI_WAIT_FD;
		ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
		if (!ret && fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd)) {
			e->wait_fd = -1;
			fi_close(&e->cq->fid);
			e->cq = NULL;
			ret = -FI_ENOSYS;
		}
	}
	if (ret) {
		/* No wait object (or none asked for): callers poll. */
		cq_attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
	}
	if (ret) {
		say(err, errlen, "fi_cq_open", ret);
		goto fail;
	}
	av_attr.type = e->info->domain_attr->av_type == FI_AV_UNSPEC
			       ? FI_AV_TABLE
			       : e->info->domain_attr->av_type;
	av_attr.count = a->npeers;
	ret = fi_av_open(e->domain, &av_attr, &e->av, NULL);
	if (ret) {
		say(err, errlen, "fi_av_open", ret);
		goto fail;
	}
	ret = fi_endpoint(e->domain, e->info, &e->ep, NULL);
	if (ret) {
		say(err, errlen, "fi_endpoint", ret);
		goto fail;
	}
	ret = fi_ep_bind(e->ep, &e->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret) {
		say(err, errlen, "fi_ep_bind", ret);
		goto fail;
	}
	ret = fi_enable(e->ep);
	if (ret) {
		say(err, errlen, "fi_enable", ret);
		goto fail;
	}

	e->rx_mem = pool(a->rx_count, a->buf_size);
	e->tx_mem = pool(a->tx_count, a->buf_size);
	e->rx_ctx = calloc(a->rx_count, sizeof(*e->rx_ctx));
	e->tx_ctx = calloc(a->tx_count, sizeof(*e->tx_ctx));
	e->tx_tmp = calloc(a->tx_count, sizeof(*e->tx_tmp));
	e->peers = malloc(a->npeers * sizeof(*e->peers));
	if (!e->rx_mem || !e->tx_mem || !e->rx_ctx || !e->tx_ctx || !e->tx_tmp || !e->peers) {
		say(err, errlen, "allocating buffer pools", -FI_ENOMEM);
		ret = -FI_ENOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < a->npeers; i++)
		e->peers[i] = FI_ADDR_NOTAVAIL;
	ret = reg(e, e->rx_mem, a->rx_count * a->buf_size, FI_RECV, 0, &e->rx_mr, &e->rx_desc);
	if (!ret)
		ret = reg(e, e->tx_mem, a->tx_count * a->buf_size, FI_SEND, 0, &e->tx_mr,
			  &e->tx_desc);
	if (ret) {
		say(err, errlen, "fi_mr_reg of the buffer pools", ret);
		goto fail;
	}
	*out = e;
	return 0;
fail:
	nf_ofi_close(e);
	return ret < 0 ? ret : -FI_EOTHER;
}

NF_EXPORT int nf_ofi_info(const struct nf_ep *e, struct nf_ep_info *o)
{
	memset(o, 0, sizeof(*o));
	o->rx_base = e->rx_mem;
	o->tx_base = e->tx_mem;
	o->buf_size = e->buf_size;
	o->inject_size = e->info->tx_attr->inject_size;
	o->mr_mode = e->info->domain_attr->mr_mode;
	o->max_msg_size = e->info->ep_attr->max_msg_size;
	o->rma = e->rma;
	o->wait_fd = e->wait_fd;
	o->msg_order = e->info->tx_attr->msg_order;
	o->iov_limit = e->info->tx_attr->iov_limit < NF_MAX_IOV ? e->info->tx_attr->iov_limit
								 : NF_MAX_IOV;
	o->rma_iov_limit = e->info->tx_attr->rma_iov_limit < NF_MAX_IOV
				   ? e->info->tx_attr->rma_iov_limit
				   : NF_MAX_IOV;
	snprintf(o->provider, sizeof(o->provider), "%s", e->info->fabric_attr->prov_name);
	snprintf(o->fabric, sizeof(o->fabric), "%s", e->info->fabric_attr->name);
	snprintf(o->domain, sizeof(o->domain), "%s", e->info->domain_attr->name);
	return 0;
}

NF_EXPORT int nf_ofi_getname(struct nf_ep *e, void *buf, size_t *len)
{
	return fi_getname(&e->ep->fid, buf, len);
}

NF_EXPORT int nf_ofi_insert(struct nf_ep *e, uint64_t rank, const void *addr, size_t len)
{
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	int ret;

	if (rank >= e->npeers || !addr || !len)
		return -FI_EINVAL;
	ret = fi_av_insert(e->av, addr, 1, &fa, 0, NULL);
	if (ret < 0)
		return ret;
	if (ret != 1 || fa == FI_ADDR_NOTAVAIL)
		return -FI_EADDRNOTAVAIL;
	e->peers[rank] = fa;
	return 0;
}

NF_EXPORT int nf_ofi_post_recv(struct nf_ep *e, uint64_t idx)
{
	if (idx >= e->rx_count)
		return -FI_EINVAL;
	return (int)fi_recv(e->ep, e->rx_mem + idx * e->buf_size, e->buf_size, e->rx_desc,
			    FI_ADDR_UNSPEC, &e->rx_ctx[idx]);
}

/* Sends `len` bytes of slot `slot` to `rank`. Returns 1 when injected (the slot is
 * free again at once), 0 when posted (the slot is busy until its completion). */
NF_EXPORT int nf_ofi_send(struct nf_ep *e, uint64_t rank, uint64_t slot, uint64_t len,
			  int32_t inject)
{
	uint8_t *buf;
	ssize_t ret;

	if (rank >= e->npeers || slot >= e->tx_count || len > e->buf_size)
		return -FI_EINVAL;
	if (e->peers[rank] == FI_ADDR_NOTAVAIL)
		return -FI_EADDRNOTAVAIL;
	buf = e->tx_mem + slot * e->buf_size;
	if (inject && len <= e->info->tx_attr->inject_size) {
		ret = fi_inject(e->ep, buf, len, e->peers[rank]);
		return ret ? (int)ret : 1;
	}
	ret = fi_send(e->ep, buf, len, e->tx_desc, e->peers[rank], &e->tx_ctx[slot]);
	return (int)ret;
}

/* Closes the temporary registrations of slot `slot`'s operation (it is over). */
static void release_tmp(struct nf_ep *e, uint64_t slot)
{
	for (int j = 0; j < NF_MAX_IOV; j++) {
		close_fid(e->tx_tmp[slot].mr[j] ? &e->tx_tmp[slot].mr[j]->fid : NULL);
		e->tx_tmp[slot].mr[j] = NULL;
	}
}

static void classify(struct nf_ep *e, void *ctx, struct nf_completion *c)
{
	const struct fi_context2 *p = ctx;

	c->kind = NF_OTHER;
	c->idx = 0;
	if (p >= e->rx_ctx && p < e->rx_ctx + e->rx_count) {
		c->kind = NF_RX;
		c->idx = (uint32_t)(p - e->rx_ctx);
	} else if (p >= e->tx_ctx && p < e->tx_ctx + e->tx_count) {
		c->kind = NF_TX;
		c->idx = (uint32_t)(p - e->tx_ctx);
		release_tmp(e, c->idx);
	}
}

/* Reads up to `max` completions (drives the provider's progress). Returns how many,
 * 0 when none; an error completion comes alone, with err set and its text kept for
 * nf_ofi_errtext. */
NF_EXPORT int nf_ofi_poll(struct nf_ep *e, struct nf_completion *out, size_t max)
{
	struct fi_cq_msg_entry ent[32];
	struct fi_cq_err_entry ee;
	ssize_t n;

	if (max > 32)
		max = 32;
	if (!max)
		return 0;
	n = fi_cq_read(e->cq, ent, max);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&ee, 0, sizeof(ee));
		n = fi_cq_readerr(e->cq, &ee, 0);
		if (n == -FI_EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		memset(out, 0, sizeof(*out));
		classify(e, ee.op_context, out);
		out->len = ee.len;
		out->err = ee.err ? ee.err : FI_EOTHER;
		out->prov_errno = ee.prov_errno;
		snprintf(e->errtext, sizeof(e->errtext), "%s",
			 fi_cq_strerror(e->cq, ee.prov_errno, ee.err_data, NULL, 0));
		return 1;
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		classify(e, ent[i].op_context, &out[i]);
		out[i].len = ent[i].len;
	}
	return (int)n;
}

NF_EXPORT const char *nf_ofi_errtext(const struct nf_ep *e) { return e->errtext; }

/* Registers [buf, buf+len) for local and remote RMA as a new region; `ext` says the
 * memory is the caller's (not freed with the region). */
static int mr_new(struct nf_ep *e, uint8_t *buf, uint64_t len, int ext, struct nf_mr **out,
		  uint64_t *key, uint64_t *base)
{
	struct nf_mr *m;
	void *desc;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->buf = buf;
	m->len = len;
	m->ext = ext;
	ret = reg(e, buf, len, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 1, &m->mr,
		  &desc);
	if (ret) {
		free(m);
		return ret;
	}
	*key = fi_mr_key(m->mr);
	*base = (e->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0;
	*out = m;
	return 0;
}

/* Allocates `len` bytes (page-aligned, zeroed) registered for local and remote RMA. */
NF_EXPORT int nf_ofi_mr_alloc(struct nf_ep *e, uint64_t len, struct nf_mr **out,
			      uint64_t *key, uint64_t *base)
{
	uint8_t *buf;
	int ret;

	*out = NULL;
	if (!e->rma)
		return -FI_ENOSYS;
	if (!len)
		return -FI_EINVAL;
	buf = pool(1, len);
	if (!buf)
		return -FI_ENOMEM;
	ret = mr_new(e, buf, len, 0, out, key, base);
	if (ret)
		free(buf);
	return ret;
}

/* Registers the caller's `len` bytes at `buf` for local and remote RMA; the memory
 * stays the caller's (nf_ofi_mr_free only deregisters it). */
NF_EXPORT int nf_ofi_mr_reg(struct nf_ep *e, uint8_t *buf, uint64_t len, struct nf_mr **out,
			    uint64_t *key, uint64_t *base)
{
	*out = NULL;
	if (!e->rma)
		return -FI_ENOSYS;
	if (!buf || !len)
		return -FI_EINVAL;
	return mr_new(e, buf, len, 1, out, key, base);
}

NF_EXPORT uint8_t *nf_ofi_mr_buf(const struct nf_mr *m) { return m->buf; }

NF_EXPORT void nf_ofi_mr_free(struct nf_mr *m)
{
	if (!m)
		return;
	close_fid(m->mr ? &m->mr->fid : NULL);
	if (!m->ext)
		free(m->buf);
	free(m);
}

/* Whether the caller may sleep on the wait fd now: 0 yes, -FI_EAGAIN when there are
 * completions (or progress) to make first. */
NF_EXPORT int nf_ofi_trywait(struct nf_ep *e)
{
	struct fid *f = &e->cq->fid;

	if (e->wait_fd < 0)
		return -FI_ENOSYS;
	return fi_trywait(e->fabric, &f, 1);
}

/* One RMA operation in slot `slot` to `rank`: write the `nl` local pieces, in order,
 * to the `nr` remote pieces (the same total length), or read the remote pieces into
 * the local ones. The local pieces lie in region `m`, or (m NULL) in any memory the
 * caller keeps valid until the completion: they are then registered for the
 * operation if the provider wants local registration. Completes through the CQ like
 * a send; a write completes only once its data is at the target
 * (FI_DELIVERY_COMPLETE), not merely sent. */
NF_EXPORT int nf_ofi_rmav(struct nf_ep *e, int32_t write, uint64_t rank, uint64_t slot,
			  struct nf_mr *m, const struct nf_iov *local, uint64_t nl,
			  const struct nf_riov *remote, uint64_t nr)
{
	struct iovec iov[NF_MAX_IOV];
	void *desc[NF_MAX_IOV];
	struct fi_rma_iov riov[NF_MAX_IOV];
	uint64_t total = 0, rtotal = 0;
	struct fi_msg_rma msg;
	ssize_t ret;
	int ret2;

	if (!e->rma)
		return -FI_ENOSYS;
	if (rank >= e->npeers || slot >= e->tx_count || !nl || !nr || nl > NF_MAX_IOV ||
	    nr > NF_MAX_IOV || nl > e->info->tx_attr->iov_limit ||
	    nr > e->info->tx_attr->rma_iov_limit)
		return -FI_EINVAL;
	if (e->peers[rank] == FI_ADDR_NOTAVAIL)
		return -FI_EADDRNOTAVAIL;
	for (uint64_t i = 0; i < nl; i++) {
		if (m && (local[i].buf < m->buf || local[i].len > m->len ||
			  (uint64_t)(local[i].buf - m->buf) > m->len - local[i].len))
			return -FI_EINVAL;
		iov[i].iov_base = local[i].buf;
		iov[i].iov_len = local[i].len;
		desc[i] = NULL;
		total += local[i].len;
	}
	for (uint64_t i = 0; i < nr; i++) {
		riov[i].addr = remote[i].addr;
		riov[i].len = remote[i].len;
		riov[i].key = remote[i].key;
		rtotal += remote[i].len;
	}
	if (total != rtotal)
		return -FI_EINVAL;
	for (uint64_t i = 0; i < nl; i++) {
		if (m) {
			desc[i] = m->mr ? fi_mr_desc(m->mr) : NULL;
			continue;
		}
		ret2 = reg(e, local[i].buf, local[i].len, write ? FI_WRITE : FI_READ, 0,
			   &e->tx_tmp[slot].mr[i], &desc[i]);
		if (ret2) {
			release_tmp(e, slot);
			return ret2;
		}
	}
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.desc = desc;
	msg.iov_count = nl;
	msg.addr = e->peers[rank];
	msg.rma_iov = riov;
	msg.rma_iov_count = nr;
	msg.context = &e->tx_ctx[slot];
	if (write)
		ret = fi_writemsg(e->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
	else
		ret = fi_readmsg(e->ep, &msg, FI_COMPLETION);
	if (ret)
		release_tmp(e, slot);
	return (int)ret;
}
