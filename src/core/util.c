#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "core/internal.h"

/* ---- UTF-8, and escaping names for a terminal, Markdown and JSON ---- */

size_t as_utf8_len(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	unsigned c = s[0];
	size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2
		   : c >= 0xe0 && c <= 0xef		    ? 3
		   : c >= 0xf0 && c <= 0xf4		    ? 4
							    : 0;
	if (len == 0 || n < len)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* The second byte's range: no overlong form (E0, F0), no surrogate
	 * (ED), nothing past U+10FFFF (F4). */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

/* Whether the character at s (n bytes) is one a terminal or an editor
 * acts on rather than shows: C0 and C1 controls, DEL, and the bidi
 * overrides and isolates that reorder what follows them. */
static bool is_control(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	if (n == 2)
		return s[0] == 0xc2 && s[1] < 0xa0;
	return n == 3 && s[0] == 0xe2 &&
	       ((s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) ||
		(s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9));
}

/*
 * The escape of the character at p (up to end) into piece (16 bytes):
 * its length in piece; *used says how many bytes of p it took. The one
 * rule set of as_escape and as_escape_write.
 */
static size_t escape_piece(const unsigned char *p, const unsigned char *end,
			   enum as_escape_how how, char *piece, size_t *used)
{
	size_t k = 0, n = as_utf8_len(p, (size_t)(end - p));
	if (n == 0 || is_control(p, n)) {
		for (size_t i = 0; i < (n ? n : 1); i++)
			k += (size_t)snprintf(piece + k, 16 - k, "\\x%02x",
					      p[i]);
		n = n ? n : 1;
	} else if (how == AS_ESCAPE_MARKDOWN && strchr("<>&", *p)) {
		k = (size_t)snprintf(piece, 16, "&%s;",
				     *p == '<'	 ? "lt"
				     : *p == '>' ? "gt"
						 : "amp");
	} else if ((how == AS_ESCAPE_MARKDOWN && strchr("\\`*_[]|~#", *p)) ||
		   (how == AS_ESCAPE_MARKDOWN_CODE && *p == '|')) {
		piece[0] = '\\';
		piece[1] = (char)*p;
		k = 2;
	} else {
		memcpy(piece, p, n);
		k = n;
	}
	*used = n;
	return k;
}

size_t as_escape(char *buf, size_t len, const char *s, enum as_escape_how how)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + strlen(s);
	size_t o = 0, w = 0; /* the length in all, the bytes written */
	bool full = len == 0;
	while (p < end) {
		char piece[16];
		size_t n, k = escape_piece(p, end, how, piece, &n);
		p += n;
		/* Whole pieces only: nothing is cut inside an escape or a
		 * character. */
		if (!full && w + k < len) {
			memcpy(buf + w, piece, k);
			w += k;
		} else {
			full = true;
		}
		o += k;
	}
	if (len)
		buf[w] = 0;
	return o;
}

void as_escape_write(FILE *f, const char *s, enum as_escape_how how)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + strlen(s);
	while (p < end) {
		char piece[16];
		size_t n, k = escape_piece(p, end, how, piece, &n);
		fwrite(piece, 1, k, f);
		p += n;
	}
}

void as_md_table_head(FILE *f, const char *const *cols, const char *align)
{
	size_t n = strlen(align);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "| %s ", cols[i]);
	fputs("|\n", f);
	for (size_t i = 0; i < n; i++)
		fputs(align[i] == 'r' ? "|---:" : "|---", f);
	fputs("|\n", f);
}

/*
 * JSON needs ", \ and the bytes below 0x20 escaped, and UTF-8 (RFC 8259,
 * section 8.1): a byte that is not UTF-8 is written as the text \xNN (its
 * backslash escaped), as the terminal shows it, so every JSON parser reads
 * the string and a reader sees which byte it was.
 */
size_t as_json_char(const unsigned char *s, size_t n, char *out,
		    size_t *used)
{
	size_t len = as_utf8_len(s, n);
	*used = len ? len : 1;
	if (len == 0)
		return (size_t)snprintf(out, 8, "\\\\x%02x", *s);
	switch (*s) {
	case '"': return (size_t)snprintf(out, 8, "\\\"");
	case '\\': return (size_t)snprintf(out, 8, "\\\\");
	case '\n': return (size_t)snprintf(out, 8, "\\n");
	case '\t': return (size_t)snprintf(out, 8, "\\t");
	case '\r': return (size_t)snprintf(out, 8, "\\r");
	default:
		if (*s < 0x20)
			return (size_t)snprintf(out, 8, "\\u%04x", *s);
		memcpy(out, s, len);
		return len;
	}
}

void as_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + strlen(s);
	putc('"', f);
	while (p < end) {
		char piece[8];
		size_t n, k = as_json_char(p, (size_t)(end - p), piece, &n);
		fwrite(piece, 1, k, f);
		p += n;
	}
	putc('"', f);
}

const char *as_human_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB",
					   "PiB", "EiB"};
	int u = 0;
	double v = (double)n;
	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else if (v >= 100.0)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else if (v >= 10.0)
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

/* Bottom-up merge sort: runs of width w merged from src into dst. */
int as_sort_u32(uint32_t *v, size_t n, as_less_fn less, const void *ctx)
{
	if (n < 2)
		return AS_OK;
	uint32_t *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return AS_ENOMEM;
	/* Insertion sort runs of 16 first: cheap on short runs. */
	const size_t run = 16;
	for (size_t lo = 0; lo < n; lo += run) {
		size_t hi = lo + run < n ? lo + run : n;
		for (size_t i = lo + 1; i < hi; i++) {
			uint32_t x = v[i];
			size_t j = i;
			while (j > lo && less(x, v[j - 1], ctx)) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
	}
	uint32_t *src = v, *dst = tmp;
	for (size_t w = run; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				dst[k++] = less(src[j], src[i], ctx) ? src[j++]
								     : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		uint32_t *s = src;
		src = dst;
		dst = s;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return AS_OK;
}

int as_sort_u64_from(uint64_t *a, size_t n, unsigned from)
{
	if (n < 2)
		return AS_OK;
	uint64_t any = 0, all = ~0ull;
	for (size_t i = 0; i < n; i++) {
		any |= a[i];
		all &= a[i];
	}
	uint64_t *src = a, *tmp = NULL;
	for (unsigned shift = from; shift < 64; shift += 8) {
		if ((((any ^ all) >> shift) & 0xff) == 0)
			continue; /* every value has this byte: nothing moves */
		if (!tmp && !(tmp = malloc(n * sizeof(*tmp))))
			return AS_ENOMEM; /* before the first pass */
		uint64_t *dst = src == a ? tmp : a;
		size_t at[256] = {0};
		for (size_t i = 0; i < n; i++)
			at[(src[i] >> shift) & 0xff]++;
		for (size_t d = 0, sum = 0; d < 256; d++) {
			size_t c = at[d];
			at[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[at[(src[i] >> shift) & 0xff]++] = src[i];
		src = dst;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	return AS_OK;
}

int as_sort_u32_keyed(uint32_t *v, size_t n, as_key_fn key, as_less_fn less,
		      const void *ctx)
{
	uint64_t *a = malloc((n + 1) * sizeof(*a));
	if (!a)
		return AS_ENOMEM;
	for (size_t k = 0; k < n; k++)
		a[k] = (uint64_t)key(v[k], ctx) << 32 | v[k];
	int err = as_sort_u64_from(a, n, 32);
	for (size_t k = 0, run = 0; !err && k < n; k++) {
		v[k] = (uint32_t)a[k];
		if (k + 1 < n && a[k + 1] >> 32 == a[k] >> 32)
			continue;
		if (less && k > run)
			err = as_sort_u32(v + run, k + 1 - run, less, ctx);
		run = k + 1;
	}
	free(a);
	return err;
}

double as_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool as_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9)
			return false;
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

enum as_size_why as_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTPE";
	size_t len = strlen(s), digits = strspn(s, "0123456789");
	unsigned shift = 0;
	if (digits == 0)
		return AS_SIZE_NOT_NUMBER;
	if (digits + 1 == len) {
		char c = s[digits];
		const char *u = strchr(units, c >= 'a' && c <= 'z' ? c - 32 : c);
		if (!u || !*u)
			return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
				       ? AS_SIZE_BAD_UNIT
				       : AS_SIZE_NOT_NUMBER;
		shift = 10 * (unsigned)(u - units + 1);
	} else if (digits != len) {
		return AS_SIZE_NOT_NUMBER;
	}
	uint64_t v;
	if (!as_parse_u64(s, digits, &v) || v > UINT64_MAX >> shift)
		return AS_SIZE_TOO_LARGE;
	*out = v << shift;
	return AS_SIZE_OK;
}

const char *as_next_line(const char **p, const char *end, size_t *len)
{
	if (*p >= end)
		return NULL;
	const char *s = *p;
	if (*s == '\n') { /* a blank line: no memchr set up for one byte */
		*p = s + 1;
		*len = 0;
		return s;
	}
	const char *nl = memchr(s, '\n', (size_t)(end - s));
	const char *e = nl ? nl : end;
	*p = nl ? nl + 1 : end;
	if (e > s && e[-1] == '\r')
		e--;
	*len = (size_t)(e - s);
	return s;
}

size_t as_bom_len(const char *s, size_t len)
{
	return len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* ---- A string map ---- */

struct as_strmap_slot {
	const char *key; /* NULL: empty */
	size_t len;
	uint32_t ns, value;
	uint64_t hash;
};

static uint64_t key_hash(uint32_t ns, const char *key, size_t len)
{
	return as_hash_mem(key, len) ^ (uint64_t)ns * 0x9e3779b97f4a7c15ull;
}

static uint32_t map_find(const struct as_strmap *m, uint32_t ns,
			 const char *key, size_t len, uint64_t h)
{
	uint32_t i = (uint32_t)h & m->mask;
	for (;; i = (i + 1) & m->mask) {
		const struct as_strmap_slot *s = &m->slot[i];
		if (!s->key || (s->hash == h && s->ns == ns && s->len == len &&
				memcmp(s->key, key, len) == 0))
			return i;
	}
}

int as_strmap_put(struct as_strmap *m, uint32_t ns, const char *key,
		  size_t len, uint32_t value, bool keep)
{
	if (2 * ((size_t)m->n + 1) > (size_t)m->mask + 1 || !m->slot) {
		size_t cap = m->slot ? 2 * ((size_t)m->mask + 1) : 64;
		if (cap > ((size_t)1 << 31))
			return AS_ENOMEM;
		struct as_strmap grown = {calloc(cap, sizeof(*grown.slot)),
					  (uint32_t)(cap - 1), m->n};
		if (!grown.slot)
			return AS_ENOMEM;
		for (size_t i = 0; m->slot && i <= m->mask; i++)
			if (m->slot[i].key)
				grown.slot[map_find(&grown, m->slot[i].ns,
						    m->slot[i].key,
						    m->slot[i].len,
						    m->slot[i].hash)] =
					m->slot[i];
		free(m->slot);
		*m = grown;
	}
	uint64_t h = key_hash(ns, key, len);
	struct as_strmap_slot *s = &m->slot[map_find(m, ns, key, len, h)];
	if (s->key && keep)
		return AS_OK;
	if (!s->key)
		m->n++;
	*s = (struct as_strmap_slot){key, len, ns, value, h};
	return AS_OK;
}

uint32_t as_strmap_get(const struct as_strmap *m, uint32_t ns,
		       const char *key, size_t len)
{
	if (!m->slot)
		return AS_NONE;
	const struct as_strmap_slot *s =
		&m->slot[map_find(m, ns, key, len, key_hash(ns, key, len))];
	return s->key ? s->value : AS_NONE;
}

void as_strmap_finish(struct as_strmap *m)
{
	free(m->slot);
	m->slot = NULL;
	m->mask = m->n = 0;
}

/* ---- Keyed hashing ---- */

/*
 * The process's hash key: random, drawn at the first hash (getrandom(2),
 * else /dev/urandom, else the clock and an address), the same for every
 * table and thread; 0 until then. Process-wide, like the temporary files
 * a signal handler removes (output.c): a key, not run state. Fuzz builds use a fixed key so a
 * finding replays the same way.
 */
static _Atomic uint64_t hash_key;

static uint64_t fresh_key(void)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	return 0x243f6a8885a308d3ull;
#else
	uint64_t k = 0;
	FILE *f;
	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k) &&
	    (f = fopen("/dev/urandom", "rb"))) {
		if (fread(&k, sizeof(k), 1, f) != 1)
			k = 0;
		fclose(f);
	}
	if (!k) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		k = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
		    (uint64_t)(uintptr_t)&k;
		k = as_splitmix64(&k);
	}
	return k;
#endif
}

/* The two halves of the key. */
static AS_ALWAYS_INLINE void run_key(uint64_t *k0, uint64_t *k1)
{
	uint64_t k = atomic_load_explicit(&hash_key, memory_order_relaxed);
	if (!k) {
		uint64_t want = fresh_key() | 1, seen = 0;
		k = atomic_compare_exchange_strong(&hash_key, &seen, want)
			    ? want
			    : seen;
	}
	*k0 = k;
	*k1 = (k ^ (k >> 29)) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
}

/* splitmix64's output mix: a bijection with full avalanche. */
static AS_ALWAYS_INLINE uint64_t fmix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t as_hash_u64(uint64_t x)
{
	uint64_t k0, k1;
	run_key(&k0, &k1);
	return fmix(fmix(x ^ k0) ^ k1);
}

uint64_t as_hash_pair(uint64_t a, uint64_t b)
{
	uint64_t k0, k1;
	run_key(&k0, &k1);
	return fmix(fmix(a ^ k0) ^ b ^ k1);
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                         \
	do {                                                             \
		v0 += v1;                                                \
		v1 = ROTL(v1, 13);                                       \
		v1 ^= v0;                                                \
		v0 = ROTL(v0, 32);                                       \
		v2 += v3;                                                \
		v3 = ROTL(v3, 16);                                       \
		v3 ^= v2;                                                \
		v0 += v3;                                                \
		v3 = ROTL(v3, 21);                                       \
		v3 ^= v0;                                                \
		v2 += v1;                                                \
		v1 = ROTL(v1, 17);                                       \
		v1 ^= v2;                                                \
		v2 = ROTL(v2, 32);                                       \
	} while (0)

/* SipHash-1-3 (one round a word, three to finish) under the run's key. */
uint64_t as_hash_mem(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t k0, k1;
	run_key(&k0, &k1);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull,
		 v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	uint64_t m;
	size_t n = len;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&m, s, 8);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	m = (uint64_t)len << 56;
	for (size_t i = 0; i < n; i++)
		m |= (uint64_t)s[i] << (8 * i);
	v3 ^= m;
	SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t as_hash_str(const char *s)
{
	return as_hash_mem(s, strlen(s));
}

void as_problem(struct as_problems *p, const char *fmt, ...)
{
	if (p->n++ == 0 && p->msg && p->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->msg, p->len, fmt, ap);
		va_end(ap);
	}
}
