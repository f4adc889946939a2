/* A fake CUDA driver: the `cu*` entry points that benchmarks/gpu/runtime/mgpu_runtime.c opens,
 * simulating one device on the host, so that lowered MLIR programs run in CI without a GPU.
 *
 * What it models, and why:
 * - "Device" memory is host memory (never given back before exit, so that a freed buffer's
 *   address is never reused and a late use of it is still recognized).
 * - Work enqueued on a stream (copy, memset, kernel launch, wait for an event) is kept, not
 *   done: it runs, in order, only when the stream is synchronized, when an event recorded on
 *   it is synchronized, or when another stream that waits for such an event runs. A missing
 *   synchronization then shows up as stale data in the program's output.
 * - A kernel launch does nothing (PTX cannot run here); it is checked against the kernel's
 *   PTX signature and remembers which buffers its pointer arguments point into.
 * - Misuse is reported, one line on stderr each, `fake-cuda: <call>: <what>`: a stream or
 *   event used after its destruction or never created, destroyed twice; a stream destroyed
 *   with work no synchronization or event covers ("missing synchronisation"); a free of
 *   memory that pending work still uses; a use of freed memory; streams, events and
 *   allocations alive at exit (leaks; modules and the context may stay). A bad handle also
 *   gets CUDA's error code back; at exit, a process that had any report exits with status 3
 *   (after a `fake-cuda-summary:` line).
 * - FAKE_CUDA_TRACE=1 prints every call to stderr (`fake-cuda-trace: ...`).
 *
 * The entry points have the names libcuda exports (cuMemAlloc_v2, cuStreamDestroy_v2, ...).
 */

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUhandle;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
};

enum { VIOLATION_EXIT_STATUS = 3, MAX_KERNEL_PARAMS = 64 };

/* ---- reports and tracing ---- */

static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static int violations;
static bool tracing;
static const char *current_call = "?";

static void report(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fake-cuda: %s: ", current_call);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  violations++;
}

/* Every entry point starts here (lock, name the call for reports, trace) and leaves by
 * `leave`. */
static void enter(const char *call, const char *format, ...) {
  pthread_mutex_lock(&driver_lock);
  current_call = call;
  if (!tracing)
    return;
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fake-cuda-trace: %s(", call);
  vfprintf(stderr, format, args);
  fputs(")\n", stderr);
  va_end(args);
}

static CUresult leave(CUresult result) {
  pthread_mutex_unlock(&driver_lock);
  return result;
}

/* ---- handles ----
 * A handle is a kind tag and an index into that kind's table, so that a handle of the wrong
 * kind, or one never created, is recognized without dereferencing it. */

enum kind { STREAM = 1, EVENT, MODULE, FUNCTION, CONTEXT };
static const char *const KIND_NAMES[] = {"", "stream", "event", "module", "function", "context"};

struct table {
  void **items;
  size_t count, capacity;
};

/* Returns the item's 1-based index. */
static size_t append(struct table *t, void *item) {
  if (t->count == t->capacity) {
    t->capacity = t->capacity ? 2 * t->capacity : 16;
    t->items = realloc(t->items, t->capacity * sizeof *t->items);
  }
  t->items[t->count++] = item;
  return t->count;
}

static CUhandle add(struct table *t, enum kind kind, void *item) {
  return (CUhandle)(((uintptr_t)kind << 40) | append(t, item));
}

static void *lookup(const struct table *t, enum kind kind, CUhandle handle) {
  uintptr_t h = (uintptr_t)handle, index = h & ((1ULL << 40) - 1);
  if (h >> 40 != (uintptr_t)kind || index == 0 || index > t->count) {
    report("%p is not a %s this driver created", handle, KIND_NAMES[kind]);
    return NULL;
  }
  return t->items[index - 1];
}

/* ---- memory ---- */

struct allocation {
  char *base;
  size_t bytes;
  int id;
  bool managed, freed;
};

static struct table allocations;

static struct allocation *allocation_at(const void *p) {
  for (size_t i = 0; i < allocations.count; i++) {
    struct allocation *a = allocations.items[i];
    if ((const char *)p >= a->base && (const char *)p < a->base + a->bytes)
      return a;
  }
  return NULL;
}

/* ---- streams and their pending work ---- */

enum op_kind { COPY, SET32, SET16, LAUNCH, WAIT };
static const char *const OP_NAMES[] = {"cuMemcpyAsync", "cuMemsetD32Async", "cuMemsetD16Async",
                                       "cuLaunchKernel", "cuStreamWaitEvent"};

struct stream;

struct op {
  enum op_kind kind;
  unsigned long seq; /* global enqueue order: an event's "until" is one */
  char *dst;
  const char *src;
  size_t bytes, count;
  uint32_t value;
  struct stream *waited; /* WAIT: run this stream up to `until` */
  unsigned long until;
  struct allocation *uses[MAX_KERNEL_PARAMS + 2];
  int n_uses;
  struct op *next;
};

struct stream {
  int id;
  bool destroyed;
  unsigned long recorded_until; /* the latest event record on it covers work up to here */
  struct op *head, *tail;
};

struct event {
  int id;
  bool destroyed;
  struct stream *stream; /* NULL until recorded */
  unsigned long until;
};

static struct table streams, events;
static unsigned long next_seq = 1;
/* The NULL stream: valid without creation, never destroyed. */
static struct stream default_stream;

static void run_until(struct stream *s, unsigned long seq);

static void execute(struct op *op) {
  switch (op->kind) {
  case COPY:
    memmove(op->dst, op->src, op->bytes);
    break;
  case SET32:
    for (size_t i = 0; i < op->count; i++)
      memcpy(op->dst + 4 * i, &op->value, 4);
    break;
  case SET16:
    for (size_t i = 0; i < op->count; i++)
      memcpy(op->dst + 2 * i, &op->value, 2);
    break;
  case LAUNCH:
    break;
  case WAIT:
    run_until(op->waited, op->until);
    break;
  }
}

/* Runs `s`'s pending work in order, up to the op enqueued as `seq`. */
static void run_until(struct stream *s, unsigned long seq) {
  while (s->head != NULL && s->head->seq <= seq) {
    struct op *op = s->head;
    s->head = op->next;
    if (s->head == NULL)
      s->tail = NULL;
    execute(op);
    free(op);
  }
}

static int pending_count(const struct stream *s) {
  int n = 0;
  for (const struct op *op = s->head; op != NULL; op = op->next)
    n++;
  return n;
}

/* Notes that `op` uses the allocation `p` points into, reporting a freed one or a range that
 * runs past its end. Host memory is no allocation and is not checked. */
static void note_use(struct op *op, const void *p, size_t bytes) {
  struct allocation *a = allocation_at(p);
  if (a == NULL)
    return;
  if (a->freed)
    report("uses allocation %d, freed already", a->id);
  else if ((const char *)p + bytes > a->base + a->bytes)
    report("%zu bytes at offset %td run past the end of allocation %d (%zu bytes)", bytes,
           (const char *)p - a->base, a->id, a->bytes);
  for (int i = 0; i < op->n_uses; i++)
    if (op->uses[i] == a)
      return;
  op->uses[op->n_uses++] = a;
}

static struct op *new_op(enum op_kind kind) {
  struct op *op = calloc(1, sizeof *op);
  op->kind = kind;
  return op;
}

static void enqueue(struct stream *s, struct op *op) {
  op->seq = next_seq++;
  if (s->tail != NULL)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
}

/* ---- contexts ---- */

static bool initialized;
static int the_context; /* the primary context of device 0, the only one */
static struct table contexts;
static CUhandle primary_context;
static __thread CUhandle current_context;

static void check_at_exit(void);

/* Every call after cuInit but the context's own needs a current context, as CUDA's do. */
static bool have_context(void) {
  if (!initialized) {
    report("cuInit was not called");
    return false;
  }
  if (current_context == NULL) {
    report("no current context");
    return false;
  }
  return true;
}

static struct stream *stream_of(CUhandle handle) {
  if (handle == NULL)
    return &default_stream;
  struct stream *s = lookup(&streams, STREAM, handle);
  if (s != NULL && s->destroyed) {
    report("stream %d is used after its destruction", s->id);
    return NULL;
  }
  return s;
}

static struct event *event_of(CUhandle handle) {
  struct event *e = lookup(&events, EVENT, handle);
  if (e != NULL && e->destroyed) {
    report("event %d is used after its destruction", e->id);
    return NULL;
  }
  return e;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  static const struct {
    CUresult code;
    const char *name;
  } NAMES[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
      {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
      {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
  };
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
    if (NAMES[i].code == error) {
      *name = NAMES[i].name;
      return CUDA_SUCCESS;
    }
  *name = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
  tracing = getenv("FAKE_CUDA_TRACE") != NULL && strcmp(getenv("FAKE_CUDA_TRACE"), "1") == 0;
  enter("cuInit", "%u", flags);
  if (!initialized)
    atexit(check_at_exit);
  initialized = true;
  return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  enter("cuDeviceGet", "%d", ordinal);
  if (!initialized) {
    report("cuInit was not called");
    return leave(CUDA_ERROR_NOT_INITIALIZED);
  }
  if (ordinal != 0)
    return leave(CUDA_ERROR_INVALID_DEVICE);
  *device = 0;
  return leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRetain(CUhandle *context, CUdevice device) {
  enter("cuDevicePrimaryCtxRetain", "device %d", device);
  if (!initialized) {
    report("cuInit was not called");
    return leave(CUDA_ERROR_NOT_INITIALIZED);
  }
  if (device != 0)
    return leave(CUDA_ERROR_INVALID_DEVICE);
  if (primary_context == NULL)
    primary_context = add(&contexts, CONTEXT, &the_context);
  *context = primary_context;
  return leave(CUDA_SUCCESS);
}

CUresult cuCtxSetCurrent(CUhandle context) {
  enter("cuCtxSetCurrent", "%p", context);
  if (context != NULL && lookup(&contexts, CONTEXT, context) == NULL)
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  current_context = context;
  return leave(CUDA_SUCCESS);
}

/* ---- modules and kernels ---- */

struct module {
  int id;
  bool unloaded;
  char *ptx; /* NULL for a binary image: its kernels' parameters are not known */
};

struct function {
  struct module *module;
  char name[128];
  int n_params; /* -1: unknown */
  size_t param_bytes[MAX_KERNEL_PARAMS];
};

static struct table modules, functions;

static CUresult load_module(CUhandle *handle, const void *image) {
  if (image == NULL)
    return CUDA_ERROR_INVALID_IMAGE;
  struct module *m = calloc(1, sizeof *m);
  m->id = (int)modules.count + 1;
  if (memcmp(image, "\177ELF", 4) != 0)
    m->ptx = strdup(image);
  *handle = add(&modules, MODULE, m);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUhandle *module, const void *image) {
  enter("cuModuleLoadData", "%p", image);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  return leave(load_module(module, image));
}

CUresult cuModuleLoadDataEx(CUhandle *module, const void *image, unsigned n_options,
                            int *options, void **values) {
  (void)options, (void)values;
  enter("cuModuleLoadDataEx", "%p, %u options", image, n_options);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  return leave(load_module(module, image));
}

CUresult cuModuleUnload(CUhandle handle) {
  enter("cuModuleUnload", "%p", handle);
  struct module *m = lookup(&modules, MODULE, handle);
  if (m == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (m->unloaded) {
    report("module %d unloaded twice", m->id);
    return leave(CUDA_ERROR_INVALID_HANDLE);
  }
  m->unloaded = true;
  return leave(CUDA_SUCCESS);
}

/* The size of one PTX parameter declaration (`.param .u64 .ptr .align 1 f_param_0`, `.param
 * .align 8 .b8 f_param_1[16]`): its type's width times its array length. */
static size_t param_size(const char *decl, const char *end) {
  static const struct {
    const char *type;
    size_t bytes;
  } TYPES[] = {{".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4},
               {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u16", 2}, {".s16", 2},
               {".b16", 2}, {".f16", 2}, {".u8", 1},  {".s8", 1},  {".b8", 1}};
  size_t width = 0, length = 1;
  for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0] && width == 0; i++) {
    const char *at = strstr(decl, TYPES[i].type);
    if (at != NULL && at < end)
      width = TYPES[i].bytes;
  }
  const char *bracket = memchr(decl, '[', (size_t)(end - decl));
  if (bracket != NULL)
    length = strtoul(bracket + 1, NULL, 10);
  return width * length;
}

/* Reads the parameter list of `.entry name(...)` in `ptx` into `f`; false if there is none. */
static bool read_signature(const char *ptx, struct function *f) {
  char pattern[160];
  snprintf(pattern, sizeof pattern, ".entry %s(", f->name);
  const char *at = strstr(ptx, pattern);
  if (at == NULL)
    return false;
  const char *p = at + strlen(pattern), *close = strchr(p, ')');
  if (close == NULL)
    return false;
  f->n_params = 0;
  while (p < close && f->n_params < MAX_KERNEL_PARAMS) {
    const char *decl = strstr(p, ".param");
    if (decl == NULL || decl > close)
      break;
    const char *end = strchr(decl, ',');
    if (end == NULL || end > close)
      end = close;
    f->param_bytes[f->n_params++] = param_size(decl, end);
    p = end + 1;
  }
  return true;
}

CUresult cuModuleGetFunction(CUhandle *function, CUhandle handle, const char *name) {
  enter("cuModuleGetFunction", "%p, \"%s\"", handle, name);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct module *m = lookup(&modules, MODULE, handle);
  if (m == NULL || m->unloaded)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  struct function *f = calloc(1, sizeof *f);
  f->module = m;
  f->n_params = -1;
  snprintf(f->name, sizeof f->name, "%s", name);
  if (m->ptx != NULL && !read_signature(m->ptx, f)) {
    free(f);
    return leave(CUDA_ERROR_NOT_FOUND);
  }
  *function = add(&functions, FUNCTION, f);
  return leave(CUDA_SUCCESS);
}

/* The buffers a launch's 8-byte arguments point into (a memref's pointers among them). */
static void note_kernel_uses(struct op *op, const struct function *f, void **params) {
  for (int i = 0; i < f->n_params; i++) {
    if (f->param_bytes[i] != 8)
      continue;
    uint64_t value;
    memcpy(&value, params[i], 8);
    note_use(op, (const void *)(uintptr_t)value, 1);
  }
}

static bool valid_dimensions(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz) {
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
    return false;
  return (unsigned long)bx * by * bz <= 1024;
}

CUresult cuLaunchKernel(CUhandle handle, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, CUhandle stream, void **params,
                        void **extra) {
  (void)extra;
  enter("cuLaunchKernel", "%p, grid %ux%ux%u, block %ux%ux%u, smem %u, stream %p", handle, gx,
        gy, gz, bx, by, bz, smem, stream);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct function *f = lookup(&functions, FUNCTION, handle);
  if (f == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (f->module->unloaded) {
    report("kernel %s of module %d, unloaded already", f->name, f->module->id);
    return leave(CUDA_ERROR_INVALID_HANDLE);
  }
  if (!valid_dimensions(gx, gy, gz, bx, by, bz))
    return leave(CUDA_ERROR_INVALID_VALUE);
  struct stream *s = stream_of(stream);
  if (s == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  struct op *op = new_op(LAUNCH);
  if (params != NULL)
    note_kernel_uses(op, f, params);
  enqueue(s, op);
  return leave(CUDA_SUCCESS);
}

/* ---- streams and events ---- */

CUresult cuStreamCreate(CUhandle *stream, unsigned flags) {
  enter("cuStreamCreate", "flags %u", flags);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct stream *s = calloc(1, sizeof *s);
  s->id = (int)streams.count + 1;
  *stream = add(&streams, STREAM, s);
  return leave(CUDA_SUCCESS);
}

/* Work after the stream's latest event record is work nobody can wait for any more. */
CUresult cuStreamDestroy_v2(CUhandle stream) {
  enter("cuStreamDestroy_v2", "%p", stream);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct stream *s = lookup(&streams, STREAM, stream);
  if (s == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (s->destroyed) {
    report("stream %d destroyed twice", s->id);
    return leave(CUDA_ERROR_INVALID_HANDLE);
  }
  if (s->tail != NULL && s->tail->seq > s->recorded_until)
    report("stream %d destroyed with %d operations pending that no synchronization or event "
           "covers (missing synchronisation)", s->id, pending_count(s));
  s->destroyed = true;
  return leave(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUhandle stream) {
  enter("cuStreamSynchronize", "%p", stream);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct stream *s = stream_of(stream);
  if (s == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  run_until(s, ULONG_MAX);
  return leave(CUDA_SUCCESS);
}

/* The wait is for the event's latest record when this is called, as in CUDA; an event never
 * recorded is complete. */
CUresult cuStreamWaitEvent(CUhandle stream, CUhandle event, unsigned flags) {
  enter("cuStreamWaitEvent", "%p, %p, %u", stream, event, flags);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct stream *s = stream_of(stream);
  struct event *e = event_of(event);
  if (s == NULL || e == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (e->stream == NULL)
    return leave(CUDA_SUCCESS);
  struct op *op = new_op(WAIT);
  op->waited = e->stream;
  op->until = e->until;
  enqueue(s, op);
  return leave(CUDA_SUCCESS);
}

CUresult cuEventCreate(CUhandle *event, unsigned flags) {
  enter("cuEventCreate", "flags %u", flags);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct event *e = calloc(1, sizeof *e);
  e->id = (int)events.count + 1;
  *event = add(&events, EVENT, e);
  return leave(CUDA_SUCCESS);
}

/* Destroying an event whose work is pending is allowed (CUDA frees it once done): the waits
 * enqueued on it keep what they wait for. */
CUresult cuEventDestroy_v2(CUhandle event) {
  enter("cuEventDestroy_v2", "%p", event);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct event *e = lookup(&events, EVENT, event);
  if (e == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (e->destroyed) {
    report("event %d destroyed twice", e->id);
    return leave(CUDA_ERROR_INVALID_HANDLE);
  }
  e->destroyed = true;
  return leave(CUDA_SUCCESS);
}

CUresult cuEventRecord(CUhandle event, CUhandle stream) {
  enter("cuEventRecord", "%p, %p", event, stream);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct event *e = event_of(event);
  struct stream *s = stream_of(stream);
  if (e == NULL || s == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  e->stream = s;
  e->until = s->tail != NULL ? s->tail->seq : 0;
  s->recorded_until = e->until;
  return leave(CUDA_SUCCESS);
}

CUresult cuEventSynchronize(CUhandle event) {
  enter("cuEventSynchronize", "%p", event);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct event *e = event_of(event);
  if (e == NULL)
    return leave(CUDA_ERROR_INVALID_HANDLE);
  if (e->stream != NULL)
    run_until(e->stream, e->until);
  return leave(CUDA_SUCCESS);
}

/* ---- memory ---- */

static CUresult allocate(CUdeviceptr *ptr, size_t bytes, bool managed) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct allocation *a = calloc(1, sizeof *a);
  a->base = calloc(1, bytes);
  a->bytes = bytes;
  a->managed = managed;
  a->id = (int)allocations.count + 1;
  append(&allocations, a);
  *ptr = (CUdeviceptr)(uintptr_t)a->base;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  enter("cuMemAlloc_v2", "%zu bytes", bytes);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  return leave(allocate(ptr, bytes, false));
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned flags) {
  enter("cuMemAllocManaged", "%zu bytes, flags %u", bytes, flags);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  return leave(allocate(ptr, bytes, true));
}

/* A free while some stream still holds work on the buffer: that work would read or write
 * freed memory (the runtime synchronizes the dealloc's own stream first). */
static void check_no_pending_use(const struct allocation *a) {
  for (size_t i = 0; i < streams.count; i++) {
    const struct stream *s = streams.items[i];
    for (const struct op *op = s->head; op != NULL; op = op->next)
      for (int u = 0; u < op->n_uses; u++)
        if (op->uses[u] == a)
          report("allocation %d (%zu bytes) is freed while a pending %s on stream %d uses it",
                 a->id, a->bytes, OP_NAMES[op->kind], s->id);
  }
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  enter("cuMemFree_v2", "0x%llx", ptr);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct allocation *a = allocation_at((void *)(uintptr_t)ptr);
  if (a == NULL || a->base != (char *)(uintptr_t)ptr) {
    report("0x%llx is not an allocation of this driver", ptr);
    return leave(CUDA_ERROR_INVALID_VALUE);
  }
  if (a->freed) {
    report("allocation %d freed twice", a->id);
    return leave(CUDA_ERROR_INVALID_VALUE);
  }
  check_no_pending_use(a);
  a->freed = true;
  return leave(CUDA_SUCCESS);
}

static CUresult enqueue_memory_op(CUhandle stream, struct op *op, size_t dst_bytes) {
  struct stream *s = stream_of(stream);
  if (s == NULL) {
    free(op);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  note_use(op, op->dst, dst_bytes);
  if (op->src != NULL)
    note_use(op, op->src, op->bytes);
  enqueue(s, op);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUhandle stream) {
  enter("cuMemcpyAsync", "0x%llx, 0x%llx, %zu bytes, %p", dst, src, bytes, stream);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  struct op *op = new_op(COPY);
  op->dst = (char *)(uintptr_t)dst;
  op->src = (const char *)(uintptr_t)src;
  op->bytes = bytes;
  return leave(enqueue_memory_op(stream, op, bytes));
}

static CUresult memset_async(enum op_kind kind, CUdeviceptr dst, uint32_t value, size_t count,
                             CUhandle stream) {
  if (!have_context())
    return CUDA_ERROR_INVALID_CONTEXT;
  struct op *op = new_op(kind);
  op->dst = (char *)(uintptr_t)dst;
  op->value = value;
  op->count = count;
  return enqueue_memory_op(stream, op, count * (kind == SET32 ? 4 : 2));
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, CUhandle stream) {
  enter("cuMemsetD32Async", "0x%llx, 0x%x, %zu, %p", dst, value, count, stream);
  return leave(memset_async(SET32, dst, value, count, stream));
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, CUhandle stream) {
  enter("cuMemsetD16Async", "0x%llx, 0x%x, %zu, %p", dst, value, count, stream);
  return leave(memset_async(SET16, dst, value, count, stream));
}

/* Registered host ranges: only their start is kept, which is what unregistering names. */
static struct table registered;

static size_t registration_of(const void *p) {
  for (size_t i = 0; i < registered.count; i++)
    if (registered.items[i] == p)
      return i + 1;
  return 0;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  enter("cuMemHostRegister_v2", "%p, %zu bytes, flags %u", p, bytes, flags);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  if (registration_of(p) != 0)
    return leave(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  append(&registered, p);
  return leave(CUDA_SUCCESS);
}

CUresult cuMemHostUnregister(void *p) {
  enter("cuMemHostUnregister", "%p", p);
  if (!have_context())
    return leave(CUDA_ERROR_INVALID_CONTEXT);
  size_t i = registration_of(p);
  if (i == 0) {
    report("%p is not registered", p);
    return leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  }
  registered.items[i - 1] = NULL;
  return leave(CUDA_SUCCESS);
}

/* ---- at exit ---- */

static void report_leaks(void) {
  for (size_t i = 0; i < streams.count; i++) {
    const struct stream *s = streams.items[i];
    if (!s->destroyed)
      report("stream %d was never destroyed (%d operations pending)", s->id, pending_count(s));
  }
  for (size_t i = 0; i < events.count; i++) {
    const struct event *e = events.items[i];
    if (!e->destroyed)
      report("event %d was never destroyed", e->id);
  }
  for (size_t i = 0; i < allocations.count; i++) {
    const struct allocation *a = allocations.items[i];
    if (!a->freed)
      report("%sallocation %d (%zu bytes) was never freed", a->managed ? "managed " : "", a->id,
             a->bytes);
  }
}

/* Registered at cuInit, after the program's global destructors, so it runs before them: the
 * modules they unload are not checked. */
static void check_at_exit(void) {
  pthread_mutex_lock(&driver_lock);
  current_call = "exit";
  report_leaks();
  if (violations == 0) {
    pthread_mutex_unlock(&driver_lock);
    return;
  }
  fprintf(stderr, "fake-cuda-summary: %d reports, exit status %d\n", violations,
          VIOLATION_EXIT_STATUS);
  fflush(NULL);
  _exit(VIOLATION_EXIT_STATUS);
}
