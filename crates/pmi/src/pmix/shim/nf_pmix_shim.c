/*
 * nf_pmix_shim: the few PMIx client calls ninefold's wire-up needs, behind plain C
 * types, so that Rust loads them with dlopen and needs neither PMIx's headers nor its
 * structs (whose layout and macros change between PMIx versions).
 *
 * Every function returns a pmix_status_t (0 = PMIX_SUCCESS, negative = error);
 * nf_pmix_error_string turns it into text. One process, one PMIx client: the state
 * below is the process's, as PMIx's own is. Calls come from one thread at a time
 * (the Rust side holds the client behind &mut).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <pmix.h>

#define NF_EXPORT __attribute__((visibility("default")))

/* Bumped whenever a signature below changes; checked by ffi.rs. */
#define NF_PMIX_ABI 1

static pmix_proc_t me;

NF_EXPORT int nf_pmix_abi(void) { return NF_PMIX_ABI; }

NF_EXPORT const char *nf_pmix_error_string(int status) {
	return PMIx_Error_string((pmix_status_t)status);
}

/* An integer value of any PMIx integer type; PMIX_ERR_TYPE_MISMATCH otherwise. */
static pmix_status_t as_u64(const pmix_value_t *v, uint64_t *out) {
	switch (v->type) {
	case PMIX_UINT8: *out = v->data.uint8; return PMIX_SUCCESS;
	case PMIX_UINT16: *out = v->data.uint16; return PMIX_SUCCESS;
	case PMIX_UINT32: *out = v->data.uint32; return PMIX_SUCCESS;
	case PMIX_UINT64: *out = v->data.uint64; return PMIX_SUCCESS;
	case PMIX_SIZE: *out = v->data.size; return PMIX_SUCCESS;
	case PMIX_INT: if (v->data.integer < 0) break; *out = (uint64_t)v->data.integer; return PMIX_SUCCESS;
	case PMIX_INT32: if (v->data.int32 < 0) break; *out = (uint64_t)v->data.int32; return PMIX_SUCCESS;
	case PMIX_PROC_RANK: *out = v->data.rank; return PMIX_SUCCESS;
	default: break;
	}
	return PMIX_ERR_TYPE_MISMATCH;
}

/* Reads integer attribute `key` of `proc` into *out. */
static pmix_status_t get_u64(const pmix_proc_t *proc, const char *key, uint64_t *out) {
	pmix_value_t *v = NULL;
	pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS)
		return rc;
	rc = as_u64(v, out);
	PMIX_VALUE_RELEASE(v);
	return rc;
}

/*
 * Joins the job: PMIx_Init, then our namespace and rank, the job's size, and our
 * place on this node. `failed_key` names the attribute that could not be read.
 */
NF_EXPORT int nf_pmix_init(char *nspace, size_t nspace_cap, uint32_t *rank, uint32_t *size,
			   uint32_t *local_rank, uint32_t *local_size, const char **failed_key) {
	pmix_proc_t wild;
	uint64_t v;
	pmix_status_t rc;

	*failed_key = "PMIx_Init";
	rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS)
		return rc;
	snprintf(nspace, nspace_cap, "%s", me.nspace);
	*rank = me.rank;
	PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
	*failed_key = PMIX_JOB_SIZE;
	if ((rc = get_u64(&wild, PMIX_JOB_SIZE, &v)) != PMIX_SUCCESS)
		return rc;
	*size = (uint32_t)v;
	*failed_key = PMIX_LOCAL_SIZE;
	if ((rc = get_u64(&wild, PMIX_LOCAL_SIZE, &v)) != PMIX_SUCCESS)
		return rc;
	*local_size = (uint32_t)v;
	*failed_key = PMIX_LOCAL_RANK;
	if ((rc = get_u64(&me, PMIX_LOCAL_RANK, &v)) != PMIX_SUCCESS)
		return rc;
	*local_rank = (uint32_t)v;
	*failed_key = "";
	return PMIX_SUCCESS;
}

/* Publishes a string to every process of the job (visible after commit + fence). */
NF_EXPORT int nf_pmix_put(const char *key, const char *value) {
	pmix_value_t v;
	memset(&v, 0, sizeof v);
	v.type = PMIX_STRING;
	v.data.string = (char *)value; /* PMIx_Put copies it */
	return PMIx_Put(PMIX_GLOBAL, key, &v);
}

/* Commits the puts, then waits for every process of the job, collecting their data;
 * gives up after `timeout_s` seconds. */
NF_EXPORT int nf_pmix_fence(int timeout_s) {
	pmix_info_t info[2];
	bool collect = true;
	pmix_status_t rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return rc;
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	PMIx_Info_load(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIx_Info_load(&info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
	rc = PMIx_Fence(NULL, 0, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	return rc;
}

/*
 * Reads the string `rank` put under `key` into out[0..cap) (NUL-terminated). If it
 * does not fit, returns PMIX_ERR_OUT_OF_RESOURCE and stores the length needed in
 * *len; PMIX_ERR_TYPE_MISMATCH if the value is not a string.
 */
NF_EXPORT int nf_pmix_get(uint32_t rank, const char *key, int timeout_s, char *out, size_t cap,
			  size_t *len) {
	pmix_proc_t proc;
	pmix_info_t info;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&proc, me.nspace, rank);
	PMIX_INFO_CONSTRUCT(&info);
	PMIx_Info_load(&info, PMIX_TIMEOUT, &timeout_s, PMIX_INT);
	rc = PMIx_Get(&proc, key, &info, 1, &v);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS)
		return rc;
	if (v->type != PMIX_STRING || v->data.string == NULL) {
		rc = PMIX_ERR_TYPE_MISMATCH;
	} else {
		*len = strlen(v->data.string);
		if (*len + 1 > cap)
			rc = PMIX_ERR_OUT_OF_RESOURCE;
		else
			memcpy(out, v->data.string, *len + 1);
	}
	PMIX_VALUE_RELEASE(v);
	return rc;
}

/* Asks the launcher to end the whole job with `status`, reporting `msg`. */
NF_EXPORT int nf_pmix_abort(int status, const char *msg) {
	return PMIx_Abort(status, msg, NULL, 0);
}

NF_EXPORT int nf_pmix_finalize(void) { return PMIx_Finalize(NULL, 0); }
