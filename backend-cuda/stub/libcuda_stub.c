/* A stub CUDA driver (libcuda.so) for tests on machines without a GPU.
 *
 * It implements the subset of the driver API that cudarc's safe API calls
 * for bat's host code: init, device and primary context, streams and events
 * (all work is synchronous, so they are no-ops), allocation, copies, module
 * load, function lookup and kernel launch.
 *
 * - Device memory is host memory: cuMemAlloc returns a malloc'd pointer as the
 *   CUdeviceptr. Every copy and free is checked against the live allocations,
 *   so a host-code bug (wrong size, double free, stale pointer) fails the call
 *   with CUDA_ERROR_INVALID_VALUE instead of corrupting memory.
 * - A "module image" is the text `// bat-shim-module: PATH` naming a shared
 *   library built from the kernels with the CUDA-on-CPU shim; any other image
 *   fails with CUDA_ERROR_INVALID_IMAGE.
 * - cuModuleGetFunction(f, m, NAME) finds `bat_shim_launch_NAME` in it, and
 *   cuLaunchKernel calls that with the grid and block shape and kernelParams.
 * - BAT_STUB_CUDA_DEVICES=0 in the environment makes cuInit report
 *   CUDA_ERROR_NO_DEVICE (a driver without a device).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUmodule, *CUfunction, *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
};

typedef void (*shim_launch_fn)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, void **);

static int initialized = 0;
static char context_token; /* the primary context's handle points here */
static CUcontext current_context = NULL;

/* ---- allocations ---- */
#define MAX_ALLOCATIONS 65536
static struct { char *base; size_t size; } allocations[MAX_ALLOCATIONS];
static size_t allocation_count = 0;

static long find_allocation(const char *p, size_t bytes) {
    for (size_t i = 0; i < allocation_count; i++) {
        char *b = allocations[i].base;
        if (p >= b && p + bytes <= b + allocations[i].size) return (long)i;
    }
    return -1;
}

static CUresult allocate(CUdeviceptr *dptr, size_t bytes) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (dptr == NULL || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (allocation_count == MAX_ALLOCATIONS) return CUDA_ERROR_OUT_OF_MEMORY;
    char *p = malloc(bytes);
    if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    allocations[allocation_count].base = p;
    allocations[allocation_count].size = bytes;
    allocation_count++;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult release(CUdeviceptr dptr) {
    char *p = (char *)(uintptr_t)dptr;
    for (size_t i = 0; i < allocation_count; i++) {
        if (allocations[i].base == p) {
            free(p);
            allocations[i] = allocations[--allocation_count];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_checked(void *dst, const void *src, size_t bytes, int dst_is_device,
                             int src_is_device) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (bytes == 0) return CUDA_SUCCESS;
    if (dst_is_device && find_allocation(dst, bytes) < 0) return CUDA_ERROR_INVALID_VALUE;
    if (src_is_device && find_allocation(src, bytes) < 0) return CUDA_ERROR_INVALID_VALUE;
    memmove(dst, src, bytes);
    return CUDA_SUCCESS;
}

/* ---- errors ---- */
CUresult cuGetErrorName(CUresult error, const char **name) {
    switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    return cuGetErrorName(error, text);
}

/* ---- init, device, context ---- */
CUresult cuInit(unsigned flags) {
    (void)flags;
    const char *devices = getenv("BAT_STUB_CUDA_DEVICES");
    if (devices != NULL && strcmp(devices, "0") == 0) return CUDA_ERROR_NO_DEVICE;
    initialized = 1;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
    *version = 12090;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "bat stub device (CUDA on CPU)");
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case 75: *value = 9; break;  /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = 0; break;  /* COMPUTE_CAPABILITY_MINOR */
    case 1: *value = 1024; break; /* MAX_THREADS_PER_BLOCK */
    case 10: *value = 32; break; /* WARP_SIZE */
    /* A nominal memory system (1 GHz, 64-bit bus: 16 GB/s peak) so that
     * the benchmark's bandwidth fraction has a finite denominator; the
     * stub's figures are not speeds of anything. */
    case 36: *value = 1000000; break; /* MEMORY_CLOCK_RATE, kHz */
    case 37: *value = 64; break; /* GLOBAL_MEMORY_BUS_WIDTH, bits */
    default: *value = 0; break;  /* e.g. MEMORY_POOLS_SUPPORTED: no */
    }
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    *context = &context_token;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxSetCurrent(CUcontext context) {
    if (context != NULL && context != &context_token) return CUDA_ERROR_INVALID_CONTEXT;
    current_context = context;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
    *context = current_context;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

/* ---- streams and events: all work is synchronous ---- */
CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
    (void)flags;
    *stream = malloc(1);
    return CUDA_SUCCESS;
}
CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned flags, int priority) {
    (void)priority;
    return cuStreamCreate(stream, flags);
}
CUresult cuStreamDestroy_v2(CUstream stream) {
    free(stream);
    return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) { (void)stream; return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
    (void)stream; (void)event; (void)flags;
    return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *event, unsigned flags) {
    (void)flags;
    *event = malloc(1);
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) { (void)event; (void)stream; return CUDA_SUCCESS; }
CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned flags) {
    (void)event; (void)stream; (void)flags;
    return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent event) { (void)event; return CUDA_SUCCESS; }
CUresult cuEventQuery(CUevent event) { (void)event; return CUDA_SUCCESS; }
CUresult cuEventDestroy_v2(CUevent event) {
    free(event);
    return CUDA_SUCCESS;
}

/* ---- memory ---- */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) { return allocate(dptr, bytes); }
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
    (void)stream;
    return allocate(dptr, bytes);
}
CUresult cuMemFree_v2(CUdeviceptr dptr) { return release(dptr); }
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
    (void)stream;
    return release(dptr);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
    return copy_checked((void *)(uintptr_t)dst, src, bytes, 1, 0);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream) {
    (void)stream;
    return cuMemcpyHtoD_v2(dst, src, bytes);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
    return copy_checked(dst, (const void *)(uintptr_t)src, bytes, 0, 1);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    (void)stream;
    return cuMemcpyDtoH_v2(dst, src, bytes);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
    return copy_checked((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes, 1, 1);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    (void)stream;
    return cuMemcpyDtoD_v2(dst, src, bytes);
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
    char *p = (char *)(uintptr_t)dst;
    if (find_allocation(p, count) < 0) return CUDA_ERROR_INVALID_VALUE;
    memset(p, value, count);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
    (void)stream;
    return cuMemsetD8_v2(dst, value, count);
}

/* ---- modules and launches ---- */
static const char MODULE_TOKEN[] = "// bat-shim-module: ";

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    const char *text = image;
    if (strncmp(text, MODULE_TOKEN, sizeof MODULE_TOKEN - 1) != 0) return CUDA_ERROR_INVALID_IMAGE;
    char path[4096];
    snprintf(path, sizeof path, "%s", text + sizeof MODULE_TOKEN - 1);
    path[strcspn(path, "\r\n")] = '\0';
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "stub libcuda: %s\n", dlerror());
        return CUDA_ERROR_INVALID_IMAGE;
    }
    *module = handle;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
    return dlclose(module) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
    char symbol[512];
    snprintf(symbol, sizeof symbol, "bat_shim_launch_%s", name);
    void *launch = dlsym(module, symbol);
    if (launch == NULL) return CUDA_ERROR_NOT_FOUND;
    *function = launch;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                        void **params, void **extra) {
    (void)stream;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (function == NULL || extra != NULL) return CUDA_ERROR_INVALID_VALUE;
    if (gx * gy * gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    shim_launch_fn launch = (shim_launch_fn)function;
    launch(gx, gy, gz, bx, by, bz, shared_bytes, params);
    return CUDA_SUCCESS;
}
