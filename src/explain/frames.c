/*
 * What a stack frame is: the user's own code, generated code, a library,
 * or the allocator's machinery; and which frame of a stack is the first
 * of the user's. docs/explain.md ("Your code's frames") states the rules.
 *
 * Frames are texts as the readers give them: "FILE:LINE:FUNCTION"
 * (PyTorch snapshots), "FUNCTION FILE:LINE", "FUNCTION" or "0xIP MODULE"
 * (heaptrack), "prog:(fn+0x10)" (mtrace). A stack is such frames joined by
 * '\n', innermost first. Classifying a frame costs a few substring
 * searches (and the options' regular expressions); callers classify each
 * stack once.
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

/*
 * The allocator's machinery, matched in the frame's text without its
 * parameter lists (so that a parameter of type c10::Allocator does not
 * make a user's function the allocator's): left out of representative
 * stacks, never a user frame.
 */
static const char *const machinery[] = {
	"malloc", "calloc", "realloc", "memalign", "valloc", "aligned_alloc",
	"operator new", "CachingAllocator", "at::detail::", "at::empty",
	"at::native::empty", "at::_ops::empty", "_empty_generic",
	"_empty_strided", "empty_cuda", "wrapper_CUDA_memory_format_empty",
	"wrapper_CUDA_empty", "create_out", "set_output_raw_strided",
	"set_output_strided", "allocate_or_resize_outputs", "c10::impl::",
	"c10::Dispatcher", "c10::BoxedKernel", "c10::KernelFunction",
	"::redispatch", "PyMem_", "PyObject_Malloc",
	"PyObject_Calloc", "PyObject_Realloc", "_PyObject_GC_",
	"PyType_GenericAlloc", "_PyEval_EvalFrame", "heaptrack",
	"std::allocator", "new_allocator", "_M_allocate", "_M_create",
	"/torch/nn/modules/module.py", "\\torch\\nn\\modules\\module.py",
};

/* Generated code: TorchInductor's and Triton's caches, FX graph modules
 * and TorchDynamo's frames. */
static const char *const generated[] = {
	"torchinductor_", "/.triton/", "/triton/cache/", "<eval_with_key",
	"/torch/_dynamo/", "/torch/fx/", "torch_compile_debug/",
	"\\torch\\_dynamo\\", "\\torch\\fx\\",
};

/* Libraries: installed packages, the Python standard library, torch's own
 * files wherever they are. Paths are matched with '\\' read as '/'. */
static const char *const library_files[] = {
	"/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3",
	"/Lib/", "<frozen ", "/torch/",
};

/* Native frames that are a runtime's, not a program's: the C and C++
 * runtimes, CPython, PyTorch's C++ namespaces, unsymbolised frames. */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const runtime_prefixes[] = {
	"std::", "__gnu_cxx::", "__cxxabiv1::", "__libc", "__GI_", "_dl_",
	"pthread_", "at::", "c10::", "torch::", "caffe2::", "pybind11::", "??",
	"0x",
};
static const char *const runtime_names[] = {
	"_start", "start_thread", "clone", "clone3", "__clone",
	"execute_native_thread_routine",
};
static const char *const runtime_files[] = {
	"libc.so", "libstdc++", "ld-linux", "libpthread", "libpython",
	"libtorch", "libc10", "/usr/include/", "/usr/lib/gcc/",
};

/*
 * A name of the C runtime's, the C++ library's, CPython's or torch's: a
 * namespace or reserved prefix, a whole startup name, or CPython's API
 * ("Py" or "_Py" and a capital or an underscore: not PyramidNet).
 */
static bool runtime_name(const char *n)
{
	for (size_t k = 0; k < COUNT(runtime_prefixes); k++)
		if (strncmp(n, runtime_prefixes[k],
			    strlen(runtime_prefixes[k])) == 0)
			return true;
	size_t id = strcspn(n, "("); /* the name without its "()" */
	for (size_t k = 0; k < COUNT(runtime_names); k++)
		if (strlen(runtime_names[k]) == id &&
		    strncmp(n, runtime_names[k], id) == 0)
			return true;
	const char *py = n + (n[0] == '_');
	return py[0] == 'P' && py[1] == 'y' &&
	       ((py[2] >= 'A' && py[2] <= 'Z') || py[2] == '_');
}

static bool contains_any(const char *s, const char *const *list, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (strstr(s, list[k]))
			return true;
	return false;
}


bool as_x_is_machinery(const char *s, size_t n)
{
	char buf[1024];
	as_x_strip_params(s, n, buf, sizeof(buf));
	return contains_any(buf, machinery, COUNT(machinery));
}

static bool is_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (s[k] < '0' || s[k] > '9')
			return false;
	return true;
}

void as_x_frame_parts(const char *s, size_t n, struct as_x_span *file,
		      struct as_x_span *func)
{
	/* "FILE:LINE:FUNCTION": the first ":DIGITS:". */
	for (size_t i = 0; i < n; i++) {
		if (s[i] != ':')
			continue;
		size_t j = i + 1;
		while (j < n && s[j] >= '0' && s[j] <= '9')
			j++;
		if (j > i + 1 && j < n && s[j] == ':') {
			*file = (struct as_x_span){s, i};
			*func = (struct as_x_span){s + j + 1, n - j - 1};
			return;
		}
	}
	/* "FUNCTION FILE:LINE": the last token ends in ":DIGITS". */
	const char *sp = NULL;
	for (size_t i = n; i > 0; i--)
		if (s[i - 1] == ' ') {
			sp = s + i - 1;
			break;
		}
	if (sp) {
		const char *tok = sp + 1;
		size_t tn = (size_t)(s + n - tok);
		const char *colon = NULL;
		for (size_t i = tn; i > 0; i--)
			if (tok[i - 1] == ':') {
				colon = tok + i - 1;
				break;
			}
		if (colon && is_digits(colon + 1, (size_t)(tok + tn - colon - 1))) {
			*file = (struct as_x_span){tok, (size_t)(colon - tok)};
			*func = (struct as_x_span){s, (size_t)(sp - s)};
			return;
		}
		if (n > 2 && s[0] == '0' && s[1] == 'x') { /* "0xIP MODULE" */
			*file = (struct as_x_span){tok, tn};
			*func = (struct as_x_span){s, (size_t)(sp - s)};
			return;
		}
	}
	*file = (struct as_x_span){s, 0};
	*func = (struct as_x_span){s, n};
}

/* s[0, n) terminated into buf[cap] (cut to fit). */
static const char *terminated(const char *s, size_t n, char *buf, size_t cap)
{
	n = n < cap - 1 ? n : cap - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	return buf;
}

/* The same with Windows' '\\' made '/', for matching paths. */
static const char *slashed(const char *s, size_t n, char *buf, size_t cap)
{
	terminated(s, n, buf, cap);
	for (char *p = buf; *p; p++)
		if (*p == '\\')
			*p = '/';
	return buf;
}

bool as_x_python_stack(const char *text)
{
	return text && strstr(text, ".py:") != NULL;
}

static bool regex_finds(const regex_t *re, const char *s, size_t n)
{
	char buf[2048];
	return regexec(re, terminated(s, n, buf, sizeof(buf)), 0, NULL, 0) == 0;
}

enum as_x_kind as_x_frame_kind(const struct as_x_frames *fr, const char *s,
			       size_t n, bool python_stack)
{
	char buf[1024], file[1024], func[256];
	if (fr && fr->has_skip && regex_finds(&fr->skip, s, n))
		return AS_X_LIBRARY;
	if (as_x_is_machinery(s, n))
		return AS_X_ALLOCATOR;
	slashed(s, n, buf, sizeof(buf));
	if (contains_any(buf, generated, COUNT(generated)))
		return AS_X_GENERATED;
	if (fr && fr->has_user)
		return regex_finds(&fr->user, s, n) ? AS_X_USER : AS_X_LIBRARY;
	struct as_x_span fi, fu;
	as_x_frame_parts(s, n, &fi, &fu);
	slashed(fi.s, fi.n, file, sizeof(file));
	terminated(fu.s, fu.n, func, sizeof(func));
	bool python = fi.n >= 3 && memcmp(fi.s + fi.n - 3, ".py", 3) == 0;
	if (python || fi.s[0] == '<')
		return contains_any(file, library_files, COUNT(library_files))
			       ? AS_X_LIBRARY
			       : AS_X_USER;
	/* Native: in a Python program, the interpreter's and the
	 * framework's; otherwise the program's unless a runtime's. */
	if (python_stack || (fr && fr->python_program))
		return AS_X_LIBRARY;
	/* The name, after a return type ("void at::f()"). */
	char name[256];
	as_x_strip_params(func, strlen(func), name, sizeof(name));
	const char *sp = strrchr(name, ' ');
	const char *nm = sp && sp[1] ? sp + 1 : name;
	if (runtime_name(nm) || runtime_name(func) || !func[0] || contains_any(file, runtime_files, COUNT(runtime_files)))
		return AS_X_LIBRARY;
	return AS_X_USER;
}

int as_x_frames_init(struct as_x_frames *fr, const char *user_code,
		     const char *skip_frames)
{
	memset(fr, 0, sizeof(*fr));
	if (user_code && *user_code) {
		if (regcomp(&fr->user, user_code, REG_EXTENDED | REG_NOSUB))
			return AS_EINVAL;
		fr->has_user = true;
	}
	if (skip_frames && *skip_frames) {
		if (regcomp(&fr->skip, skip_frames, REG_EXTENDED | REG_NOSUB)) {
			as_x_frames_finish(fr);
			return AS_EINVAL;
		}
		fr->has_skip = true;
	}
	return AS_OK;
}

void as_x_frames_finish(struct as_x_frames *fr)
{
	if (fr->has_user)
		regfree(&fr->user);
	if (fr->has_skip)
		regfree(&fr->skip);
	fr->has_user = fr->has_skip = false;
}

/* The k-th frame of text: *at, *len; false past the last. */
static bool nth(const char *text, uint32_t k, const char **at, size_t *len)
{
	const char *p = text;
	for (uint32_t j = 0; p && *p; j++) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (j == k) {
			*at = p;
			*len = l;
			return true;
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

bool as_x_user_frame(const struct as_x_frames *fr, const char *text,
		     uint32_t *index)
{
	const char *at;
	size_t len;
	bool py = as_x_python_stack(text);
	uint32_t fallback = UINT32_MAX;
	for (uint32_t k = 0; text && nth(text, k, &at, &len); k++) {
		if (!len)
			continue;
		enum as_x_kind kind = as_x_frame_kind(fr, at, len, py);
		if (kind == AS_X_USER) {
			*index = k;
			return true;
		}
		if (kind != AS_X_ALLOCATOR && fallback == UINT32_MAX)
			fallback = k;
	}
	*index = fallback == UINT32_MAX ? 0 : fallback;
	return false;
}

bool as_x_frame_at(const char *text, uint32_t k, const char **at, size_t *len)
{
	return text && nth(text, k, at, len);
}

uint32_t as_x_user_frames(const char *text, uint32_t max, const char **at,
			  size_t *len)
{
	uint32_t n = 0;
	if (!text)
		return 0;
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		for (const char *p = text; *p && n < max;) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			if (l && (pass || !as_x_is_machinery(p, l))) {
				at[n] = p;
				len[n++] = l;
			}
			p += l + (nl != NULL);
		}
	}
	return n;
}
