/*
 * allocscope certified bounds: what strategy strip proves of a trace, no
 * plan of a space peaking below a bound, and what a user does with such a
 * proof: read a plan's in words, read them back from a file `replay --json`
 * wrote, and prove them again from their buffers alone (`check
 * --certificate`). A strategy adds one to its plan with as_plan_certify
 * (build.h).
 *
 * Ownership: a plan owns its certificates (p->certs, p->ncerts) and their
 * buffers; an array from as_certificates_load is the caller's, freed with
 * as_certificates_free.
 */
#ifndef ALLOCSCOPE_CERTIFIED_H
#define ALLOCSCOPE_CERTIFIED_H

#include "allocscope/allocscope.h"

/* ---- The certificate ----
 * A bound of one address space with the sub-problem that proves it. */

/*
 * A certified lower bound of one address space (strategy strip): no plan of
 * the space's buffers peaks below `bound`. The proof is a sub-problem: some
 * of the space's buffers (`buffers`, each with a lifetime inside its own:
 * a relaxation, since any plan of the space places them apart) that a
 * completed exact search showed has no placement of peak bound - 1 or
 * lower. Without buffers the bound is the load (the most bytes live at
 * once), which needs no search.
 */
struct as_cert_buffer {
	uint32_t id;            /* the trace buffer's index */
	uint8_t align_log2;
	uint64_t size;
	uint64_t start, end;    /* [start, end) within the buffer's lifetime */
};

struct as_certificate {
	uint16_t space;
	uint64_t load;          /* the space's most bytes live at once */
	uint64_t bound;         /* certified: every plan peaks at least here */
	uint64_t nodes;         /* search nodes the proof took */
	uint32_t nbuffers;
	struct as_cert_buffer *buffers; /* owned; NULL when nbuffers is 0 */
};

/* The certificate of `space` among p's; NULL when the plan has none. */
const struct as_certificate *as_plan_certificate(const struct as_plan *p,
						 uint16_t space);
/*
 * What certificate c says of a plan peaking at `peak`, in words, into buf
 * (n bytes): "optimal" when the peak is at the bound, else "<= X.XX% above
 * optimal", or "<= N B above optimal" for a gap under 0.005%. Returns buf.
 */
char *as_certificate_words(const struct as_certificate *c, uint64_t peak,
			   char *buf, size_t n);
/* Free an array of n certificates and their buffers (NULL: nothing). */
void as_certificates_free(struct as_certificate *c, uint32_t n);

/* ---- Proving them again ----
 * Certificates read back from `replay --json` and re-solved, for a check
 * that trusts neither the run that made them nor the file. */

/*
 * Read every certificate of a file `replay --json` wrote (each result's
 * "certificates") into *out (n of them, caller frees with
 * as_certificates_free); only the ones with a sub-problem. Returns 0 or a
 * negative code with diag filled (FILE:LINE: what is wrong).
 */
int as_certificates_load(const char *path, struct as_certificate **out,
			 uint32_t *n, struct as_diag *diag);
/*
 * Whether certificate c describes a relaxation of trace t: every buffer
 * exists in c's space with the same size, an alignment at least c's and a
 * lifetime holding c's. Returns 0, or AS_EINVAL with diag saying which
 * buffer differs and how.
 */
int as_certificate_fits(const struct as_trace *t,
			const struct as_certificate *c, struct as_diag *diag);
/*
 * Re-solve c's sub-problem from its buffers alone with the exact search:
 * 1 when no placement of peak bound - 1 exists (the bound holds), 0 when
 * one does (it does not), AS_ELIMIT when neither was settled within
 * limit_ms milliseconds or max_nodes search nodes (0: no limit),
 * AS_EINVAL for a sub-problem that is no problem (an empty lifetime, a
 * zero size, more than 6000 buffers) or out of the search's range (a
 * bound past 2^63, an alignment past 2^62), AS_ENOMEM. *nodes (may be
 * NULL) gets the effort.
 */
int as_certificate_verify(const struct as_certificate *c, double limit_ms,
			  uint64_t max_nodes, uint64_t *nodes);

#endif
