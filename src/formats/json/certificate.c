/*
 * Certificates: reading the certified bounds `replay --json` wrote (each
 * result's "certificates"; allocscope check --certificate), with the path
 * locator, error helper and integer reader of common.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "formats/json/json.h"

/*
 * The largest sub-problem read: a clique (every buffer live at one
 * instant) is checked by its padded load whatever its size, so it may hold
 * every buffer of a trace; others past 6000 are refused by the verifier.
 */
#define CERT_MAX_BUFFERS (INT32_MAX / 2)

struct certs {
	struct as_certificate *v;
	uint32_t n, cap;
};

static int read_buffer(struct as_jctx *c, const cJSON *o,
		       struct as_cert_buffer *b)
{
	if (!cJSON_IsObject(o))
		return as_json_fail(c, NULL, "expected an object");
	uint64_t id, align;
	int err;
	if ((err = as_json_get_range(c, o, "id", true, 0, 0, UINT32_MAX - 1,
				     &id)) ||
	    (err = as_json_get_range(c, o, "size", true, 0, 1, UINT64_MAX,
				     &b->size)) ||
	    (err = as_json_get_u64(c, o, "start", true, 0, &b->start)) ||
	    (err = as_json_get_u64(c, o, "end", true, 0, &b->end)) ||
	    (err = as_json_get_range(c, o, "align", false, 1, 1,
				     (uint64_t)1 << 63, &align)))
		return err;
	if (b->end <= b->start)
		return as_json_fail(c, "end", "the lifetime [%llu, %llu) is "
					      "empty",
				    (unsigned long long)b->start,
				    (unsigned long long)b->end);
	if (align & (align - 1))
		return as_json_fail(c, "align", "%llu is not a power of two",
				    (unsigned long long)align);
	b->id = (uint32_t)id;
	b->align_log2 = 0;
	while (((uint64_t)1 << b->align_log2) < align)
		b->align_log2++;
	return AS_OK;
}

/* One element of "certificates"; those without a sub-problem are skipped. */
static int read_cert(struct as_jctx *c, const cJSON *o, struct certs *out)
{
	if (!cJSON_IsObject(o))
		return as_json_fail(c, NULL, "expected an object");
	struct as_certificate cert = {0};
	uint64_t space;
	int err;
	if ((err = as_json_get_range(c, o, "space_index", true, 0, 0,
				     UINT16_MAX, &space)) ||
	    (err = as_json_get_u64(c, o, "lower_bound", true, 0, &cert.load)) ||
	    (err = as_json_get_u64(c, o, "certified_bound", true, 0,
				   &cert.bound)))
		return err;
	cert.space = (uint16_t)space;
	if (cert.bound < cert.load)
		return as_json_fail(c, "certified_bound", "below the "
							  "lower bound");
	const cJSON *sub = cJSON_GetObjectItemCaseSensitive(o, "certificate");
	if (!sub || cJSON_IsNull(sub)) {
		if (cert.bound != cert.load)
			return as_json_fail(c, "certified_bound",
					    "above the lower bound without a "
					    "certificate");
		return AS_OK;
	}
	if (!cJSON_IsObject(sub))
		return as_json_fail(c, "certificate", "expected an object or "
						      "null");
	as_json_push(c, "certificate", 0);
	uint64_t height;
	if ((err = as_json_get_u64(c, sub, "height", true, 0, &height)) ||
	    (err = as_json_get_u64(c, sub, "nodes", false, 0, &cert.nodes)))
		return err;
	if (height != cert.bound)
		return as_json_fail(c, "height", "%llu is not the certified "
						 "bound %llu",
				    (unsigned long long)height,
				    (unsigned long long)cert.bound);
	const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(sub, "buffers");
	if (!cJSON_IsArray(bufs))
		return as_json_fail(c, "buffers", "expected an array");
	int nb = cJSON_GetArraySize(bufs);
	if (nb < 1 || nb > CERT_MAX_BUFFERS)
		return as_json_fail(c, "buffers", "%d buffers: expected 1 to "
						  "%d",
				    nb, CERT_MAX_BUFFERS);
	cert.buffers = calloc((size_t)nb, sizeof(*cert.buffers));
	if (!cert.buffers)
		return as_diag_set(c->diag, 0, AS_ENOMEM, "out of memory");
	as_json_push(c, "buffers", 0);
	const cJSON *b;
	cJSON_ArrayForEach(b, bufs) {
		as_json_push(c, NULL, (int)cert.nbuffers);
		if ((err = read_buffer(c, b, &cert.buffers[cert.nbuffers]))) {
			free(cert.buffers);
			return err;
		}
		cert.nbuffers++;
		c->depth--;
	}
	c->depth -= 2;
	if (out->n == out->cap) {
		uint32_t cap = out->cap ? out->cap * 2 : 4;
		struct as_certificate *v =
			realloc(out->v, cap * sizeof(*v));
		if (!v) {
			free(cert.buffers);
			return as_diag_set(c->diag, 0, AS_ENOMEM,
					   "out of memory");
		}
		out->v = v;
		out->cap = cap;
	}
	out->v[out->n++] = cert;
	return AS_OK;
}

/* A list member `key` of o, each element read by fn (missing: none). */
static int each(struct as_jctx *c, const cJSON *o, const char *key,
		int (*fn)(struct as_jctx *, const cJSON *, struct certs *),
		struct certs *out)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!list)
		return AS_OK;
	if (!cJSON_IsArray(list))
		return as_json_fail(c, key, "expected an array");
	as_json_push(c, key, 0);
	int i = 0, err;
	const cJSON *it;
	cJSON_ArrayForEach(it, list) {
		as_json_push(c, NULL, i++);
		if ((err = fn(c, it, out)))
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

static int read_result(struct as_jctx *c, const cJSON *o, struct certs *out)
{
	if (!cJSON_IsObject(o))
		return as_json_fail(c, NULL, "expected an object");
	return each(c, o, "certificates", read_cert, out);
}

static int read_run(struct as_jctx *c, const cJSON *o, struct certs *out)
{
	if (!cJSON_IsObject(o))
		return as_json_fail(c, NULL, "expected an object");
	if (!cJSON_GetObjectItemCaseSensitive(o, "results"))
		return as_json_fail(c, NULL, "missing field 'results' (not "
					     "written by 'allocscope replay "
					     "--json')");
	return each(c, o, "results", read_result, out);
}

/* The text of a file as_certificates_load reads, into *got. */
static int parse_certs(void *ctx, const char *text, size_t len,
		       struct as_diag *diag)
{
	struct certs *got = ctx;
	size_t bom = as_bom_len(text, len);
	struct as_jctx c = {.text = text + bom, .len = len - bom,
			    .diag = diag, .exact_big = true};
	cJSON *root = NULL;
	int err = as_json_parse(&c, &root);
	if (err == AS_OK) {
		if (!cJSON_IsObject(root))
			err = as_json_fail(&c, NULL, "expected a JSON object "
						     "written by 'allocscope "
						     "replay --json'");
		else if (cJSON_GetObjectItemCaseSensitive(root, "runs"))
			err = each(&c, root, "runs", read_run, got);
		else
			err = read_run(&c, root, got);
	}
	cJSON_Delete(root);
	return err;
}

int as_certificates_load(const char *path, struct as_certificate **out,
			 uint32_t *n, struct as_diag *diag)
{
	struct certs got = {0};
	int err = as_json_load(path, parse_certs, &got, diag);
	if (err) {
		as_certificates_free(got.v, got.n);
		return err;
	}
	*out = got.v;
	*n = got.n;
	return AS_OK;
}
