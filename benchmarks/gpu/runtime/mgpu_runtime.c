/* The `mgpu*` functions that MLIR's `gpu-to-llvm` lowering calls, over the CUDA driver API.
 *
 * Written for the GPU harness (benchmarks/gpu/harness.py): the signatures are LLVM 22's, as
 * the `declare` lines of a lowered program show them (mlir/lib/ExecutionEngine/
 * CudaRuntimeWrappers.cpp defines LLVM's own). The driver is opened with dlopen, from
 * $MGPU_CUDA_DRIVER when set (the harness's fake driver, benchmarks/gpu/fake/fake_cuda.c),
 * else from libcuda.so.1, so that this file builds without cuda.h or a CUDA toolkit: the few
 * types and constants it needs are declared here, with the values cuda.h gives them.
 *
 * Any driver error is fatal: the call and its error go to stderr and the process aborts, so
 * that the harness sees a failed run and not a wrong answer.
 */

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int CUjit_option;

enum {
  CUDA_SUCCESS = 0,
  CU_STREAM_NON_BLOCKING = 0x1,
  CU_EVENT_DISABLE_TIMING = 0x2,
  CU_MEM_ATTACH_GLOBAL = 0x1,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
};

/* The driver entry points, by the names libcuda exports: cuda.h maps some API names to a
 * versioned symbol (cuMemAlloc to cuMemAlloc_v2, ...); the unversioned ones that remain in
 * libcuda are the old 32-bit ABI. */
static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void *);
} cu;

static const struct {
  const char *symbol;
  void **slot;
} SYMBOLS[] = {
    {"cuInit", (void **)&cu.cuInit},
    {"cuDeviceGet", (void **)&cu.cuDeviceGet},
    {"cuDevicePrimaryCtxRetain", (void **)&cu.cuDevicePrimaryCtxRetain},
    {"cuCtxSetCurrent", (void **)&cu.cuCtxSetCurrent},
    {"cuGetErrorName", (void **)&cu.cuGetErrorName},
    {"cuModuleLoadData", (void **)&cu.cuModuleLoadData},
    {"cuModuleLoadDataEx", (void **)&cu.cuModuleLoadDataEx},
    {"cuModuleUnload", (void **)&cu.cuModuleUnload},
    {"cuModuleGetFunction", (void **)&cu.cuModuleGetFunction},
    {"cuLaunchKernel", (void **)&cu.cuLaunchKernel},
    {"cuStreamCreate", (void **)&cu.cuStreamCreate},
    {"cuStreamDestroy_v2", (void **)&cu.cuStreamDestroy},
    {"cuStreamSynchronize", (void **)&cu.cuStreamSynchronize},
    {"cuStreamWaitEvent", (void **)&cu.cuStreamWaitEvent},
    {"cuEventCreate", (void **)&cu.cuEventCreate},
    {"cuEventDestroy_v2", (void **)&cu.cuEventDestroy},
    {"cuEventSynchronize", (void **)&cu.cuEventSynchronize},
    {"cuEventRecord", (void **)&cu.cuEventRecord},
    {"cuMemAlloc_v2", (void **)&cu.cuMemAlloc},
    {"cuMemAllocManaged", (void **)&cu.cuMemAllocManaged},
    {"cuMemFree_v2", (void **)&cu.cuMemFree},
    {"cuMemcpyAsync", (void **)&cu.cuMemcpyAsync},
    {"cuMemsetD32Async", (void **)&cu.cuMemsetD32Async},
    {"cuMemsetD16Async", (void **)&cu.cuMemsetD16Async},
    {"cuMemHostRegister_v2", (void **)&cu.cuMemHostRegister},
    {"cuMemHostUnregister", (void **)&cu.cuMemHostUnregister},
};

static void fail(const char *what, const char *why) {
  fprintf(stderr, "mgpu: %s: %s\n", what, why);
  abort();
}

static void load_driver(void) {
  const char *path = getenv("MGPU_CUDA_DRIVER");
  if (path == NULL || *path == '\0')
    path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    fail("dlopen", dlerror());
  for (size_t i = 0; i < sizeof SYMBOLS / sizeof SYMBOLS[0]; i++) {
    *SYMBOLS[i].slot = dlsym(lib, SYMBOLS[i].symbol);
    if (*SYMBOLS[i].slot == NULL)
      fail(SYMBOLS[i].symbol, "not found in the CUDA driver library");
  }
}

/* `expr` is the call as written, for the message. */
static void check(CUresult result, const char *expr) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = NULL;
  if (cu.cuGetErrorName == NULL || cu.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  fprintf(stderr, "mgpu: %s failed with %s (%d)\n", expr, name ? name : "an unknown error",
          result);
  abort();
}

#define CHECK(call) check(cu.call, #call)

static int32_t default_device = 0;
static CUcontext primary_context;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
/* The driver's current context is per thread (an async runtime calls from several). */
static __thread bool context_is_current;

static void start_driver(void) {
  load_driver();
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, default_device));
  CHECK(cuDevicePrimaryCtxRetain(&primary_context, device));
}

/* Where LLVM's wrappers push and pop the primary context around each call, this makes it
 * current once per thread: the programs use one device and never another context. */
static void use_context(void) {
  if (context_is_current)
    return;
  pthread_once(&driver_once, start_driver);
  CHECK(cuCtxSetCurrent(primary_context));
  context_is_current = true;
}

CUmodule mgpuModuleLoad(void *data, size_t size) {
  (void)size; /* a cubin or fatbin says its own size */
  use_context();
  CUmodule module = NULL;
  CHECK(cuModuleLoadData(&module, data));
  return module;
}

/* PTX text (`gpu-module-to-binary{format=isa}`), compiled by the driver at `opt_level`. */
CUmodule mgpuModuleLoadJIT(void *data, int opt_level) {
  use_context();
  char log[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, (void *)(uintptr_t)sizeof log, (void *)(intptr_t)opt_level};
  CUmodule module = NULL;
  CUresult result = cu.cuModuleLoadDataEx(&module, data, 3, options, values);
  if (result != CUDA_SUCCESS && log[0] != '\0')
    fprintf(stderr, "mgpu: the PTX JIT says: %s\n", log);
  check(result, "cuModuleLoadDataEx(&module, data, 3, options, values)");
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  use_context();
  CHECK(cuModuleUnload(module));
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  use_context();
  CUfunction function = NULL;
  CHECK(cuModuleGetFunction(&function, module, name));
  return function;
}

/* The sizes are `index` in MLIR (intptr_t), unsigned in the driver; `params_count` is the
 * number of `params`, which the driver reads from the kernel itself. */
void mgpuLaunchKernel(CUfunction function, intptr_t grid_x, intptr_t grid_y, intptr_t grid_z,
                      intptr_t block_x, intptr_t block_y, intptr_t block_z, int32_t smem,
                      CUstream stream, void **params, void **extra, size_t params_count) {
  (void)params_count;
  use_context();
  CHECK(cuLaunchKernel(function, (unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z,
                       (unsigned)block_x, (unsigned)block_y, (unsigned)block_z,
                       (unsigned)smem, stream, params, extra));
}

CUstream mgpuStreamCreate(void) {
  use_context();
  CUstream stream = NULL;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

void mgpuStreamDestroy(CUstream stream) {
  use_context();
  CHECK(cuStreamDestroy(stream));
}

void mgpuStreamSynchronize(CUstream stream) {
  use_context();
  CHECK(cuStreamSynchronize(stream));
}

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  use_context();
  CHECK(cuStreamWaitEvent(stream, event, 0));
}

CUevent mgpuEventCreate(void) {
  use_context();
  CUevent event = NULL;
  CHECK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

void mgpuEventDestroy(CUevent event) {
  use_context();
  CHECK(cuEventDestroy(event));
}

void mgpuEventSynchronize(CUevent event) {
  use_context();
  CHECK(cuEventSynchronize(event));
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  use_context();
  CHECK(cuEventRecord(event, stream));
}

/* `gpu.alloc host_shared` is managed memory, reachable from host and device. */
void *mgpuMemAlloc(uint64_t size, CUstream stream, bool is_host_shared) {
  (void)stream; /* cuMemAlloc is not stream-ordered */
  use_context();
  CUdeviceptr ptr = 0;
  if (size == 0)
    return NULL;
  if (is_host_shared)
    CHECK(cuMemAllocManaged(&ptr, size, CU_MEM_ATTACH_GLOBAL));
  else
    CHECK(cuMemAlloc(&ptr, size));
  return (void *)(uintptr_t)ptr;
}

/* `gpu.dealloc async [deps]` frees the buffer once its stream has done the work before it.
 * cuMemFree is not stream-ordered: on a GPU it waits for the whole device, implicitly. The
 * stream is synchronized here first, explicitly, so that the fake driver (which keeps the
 * stream's work until a synchronization) sees the order the IR states, and reports a free
 * that work on some other stream, never waited for, still uses. */
void mgpuMemFree(void *ptr, CUstream stream) {
  use_context();
  if (stream != NULL)
    CHECK(cuStreamSynchronize(stream));
  if (ptr != NULL)
    CHECK(cuMemFree((CUdeviceptr)(uintptr_t)ptr));
}

void mgpuMemcpy(void *dst, void *src, size_t size, CUstream stream) {
  use_context();
  CHECK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, size, stream));
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, CUstream stream) {
  use_context();
  CHECK(cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count, stream));
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, CUstream stream) {
  use_context();
  CHECK(cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value, count, stream));
}

/* A ranked memref descriptor as the LLVM lowering lays it out: two pointers, an offset, then
 * `rank` sizes and `rank` strides. */
struct memref_descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes_and_strides[];
};

static char *memref_start(const struct memref_descriptor *d, int64_t element_size) {
  return d->aligned + d->offset * element_size;
}

/* The bytes from the first element to the end of the last, for any strides. */
static size_t memref_span(int64_t rank, const struct memref_descriptor *d, int64_t element_size) {
  int64_t last = 0;
  for (int64_t i = 0; i < rank; i++) {
    int64_t size = d->sizes_and_strides[i], stride = d->sizes_and_strides[rank + i];
    if (size == 0)
      return 0;
    last += (size - 1) * stride;
  }
  return (size_t)((last + 1) * element_size);
}

void mgpuMemHostRegisterMemRef(int64_t rank, struct memref_descriptor *d, int64_t element_size) {
  use_context();
  size_t span = memref_span(rank, d, element_size);
  if (span != 0)
    CHECK(cuMemHostRegister(memref_start(d, element_size), span, 0));
}

void mgpuMemHostUnregisterMemRef(int64_t rank, struct memref_descriptor *d,
                                 int64_t element_size) {
  use_context();
  if (memref_span(rank, d, element_size) != 0)
    CHECK(cuMemHostUnregister(memref_start(d, element_size)));
}

/* Takes effect before the first call that needs the device; the programs set it first. */
void mgpuSetDefaultDevice(int32_t device) { default_device = device; }
