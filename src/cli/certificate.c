/*
 * strip's certified bounds (struct as_certificate) in the CLI: replay's
 * table lines, and allocscope check --certificate FILE [TRACE], which
 * re-verifies them from their sub-problems.
 */
#include <stdio.h>

#include "allocscope/certified.h"
#include "certificate.h"
#include "shared.h"

bool cli_print_certificates(const struct as_trace *t, const char *spec,
			    const struct as_plan *p,
			    const uint64_t *space_peak, uint64_t peak,
			    bool header)
{
	bool any = false;
	for (uint16_t k = 0; k < p->ncerts; k++) {
		const struct as_certificate *c = &p->certs[k];
		uint64_t at = space_peak && c->space < p->nspaces
				      ? space_peak[c->space]
				      : peak;
		/* At the load, "vs LB" says it all already. */
		if (at <= c->load)
			continue;
		char gap[48];
		as_certificate_words(c, at, gap, sizeof(gap));
		/* A bound at the load proves nothing "vs LB" does not say;
		 * the line says so rather than repeat it. */
		printf("%s%-28s %s %llu%s%s: %s\n",
		       header || any ? "" : "\n", cli_esc(spec),
		       c->bound > c->load ? "certified bound"
					  : "nothing proven above the lower bound",
		       (unsigned long long)c->bound,
		       t->nspaces > 1 ? " in " : "",
		       t->nspaces > 1
			       ? cli_esc(as_plan_space_name(p, t, c->space))
			       : "",
		       gap);
		any = true;
	}
	return any;
}

int cli_check_certificate(const char *cert_path, const char *trace_path,
			  const struct as_load_options *lo,
			  double limit_ms)
{
	struct as_diag d;
	struct as_certificate *c = NULL;
	struct as_trace *t = NULL;
	uint32_t n = 0;
	int err = as_certificates_load(cert_path, &c, &n, &d);
	if (err != AS_OK)
		return cli_report_diag(&d, err);
	if (trace_path && (err = as_trace_load_opts(trace_path, lo, &t, &d))) {
		as_certificates_free(c, n);
		return cli_report_diag(&d, err);
	}
	int status = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct as_certificate *ck = &c[k];
		printf("%s: space %u: bound %llu (load %llu), %u buffers: ",
		       cli_esc(cert_path), (unsigned)ck->space,
		       (unsigned long long)ck->bound,
		       (unsigned long long)ck->load, ck->nbuffers);
		if (t && as_certificate_fits(t, ck, &d) != AS_OK) {
			printf("not a sub-problem of %s: %s\n",
			       cli_esc(trace_path), cli_esc(d.msg));
			status = 1;
			continue;
		}
		uint64_t nodes = 0;
		int r = as_certificate_verify(ck, limit_ms, 0, &nodes);
		if (r == 1) {
			printf("holds (no placement peaks below it; %llu "
			       "nodes)\n",
			       (unsigned long long)nodes);
		} else if (r == 0) {
			printf("does NOT hold (a placement peaks below it)\n");
			status = 1;
		} else if (r == AS_ELIMIT) {
			printf("not re-proved within %.0f s\n", limit_ms / 1000);
			status = 1;
		} else {
			printf("%s\n", as_strerror(r));
			status = status ? status : 2;
		}
	}
	if (n == 0)
		printf("%s: no certificate beyond the load (nothing to "
		       "re-solve)\n",
		       cli_esc(cert_path));
	as_trace_destroy(t);
	as_certificates_free(c, n);
	return status;
}
