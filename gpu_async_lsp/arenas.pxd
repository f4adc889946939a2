# The C part of arenas.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. CPython's object allocator takes its arenas (1 MiB each on
# 64-bit builds) from an arena allocator that can be replaced (PyObject_SetArenaAllocator,
# "Customize pymalloc Arena Allocator" in the C API docs); this one maps them as the default
# one does, with MAP_POPULATE: their pages are made in one system call, not one page fault
# each; it hands out a reserve of arenas mapped ahead of need first (`reserve_arenas`), and
# keeps freed ones for reuse up to the reserve's size. Only on Linux; elsewhere the
# functions say no and nothing changes.
cdef extern from *:
    """
    #if defined(__linux__) && !defined(Py_LIMITED_API)
    #include <stdlib.h>
    #include <sys/mman.h>
    #include <unistd.h>
    /* Arenas mapped ahead of need (gpu_async_lsp_reserve_arenas) and freed ones kept for
       reuse, up to `keep`: handed out before any new mapping. Only blocks of the object
       allocator's arena size (obmalloc.c: 1 MiB on 64-bit builds) are held; the allocator is
       asked for others too (3.11: each thread's 16 KiB frame stack chunks), mapped and
       unmapped as they come. All calls but the mapping of the reserve run with the GIL held
       (the object allocator's rule). */
    #define GPU_ASYNC_LSP_RESERVE_MAX 256
    static void *gpu_async_lsp_held[GPU_ASYNC_LSP_RESERVE_MAX];
    static int gpu_async_lsp_held_count = 0;
    static int gpu_async_lsp_keep = 0;
    static const size_t gpu_async_lsp_arena_size = sizeof(void *) > 4 ? (size_t)1 << 20
                                                                      : (size_t)1 << 18;

    static void *gpu_async_lsp_mapped(size_t size) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void gpu_async_lsp_drop_reserve(void) {
        while (gpu_async_lsp_held_count > 0) {
            gpu_async_lsp_held_count--;
            munmap(gpu_async_lsp_held[gpu_async_lsp_held_count], gpu_async_lsp_arena_size);
        }
        gpu_async_lsp_keep = 0;
    }
    static void *gpu_async_lsp_populated_arena(void *ctx, size_t size) {
        (void)ctx;
        if (size == gpu_async_lsp_arena_size && gpu_async_lsp_held_count > 0)
            return gpu_async_lsp_held[--gpu_async_lsp_held_count];
        return gpu_async_lsp_mapped(size);
    }
    static void gpu_async_lsp_unmapped_arena(void *ctx, void *ptr, size_t size) {
        (void)ctx;
        if (size == gpu_async_lsp_arena_size && gpu_async_lsp_held_count < gpu_async_lsp_keep) {
            gpu_async_lsp_held[gpu_async_lsp_held_count++] = ptr;
            return;
        }
        munmap(ptr, size);
    }
    static int gpu_async_lsp_reserve_arenas(int count, size_t heap_bytes) {
        /* Everything mapped and touched in one stretch without the GIL, the arenas held
           after it: taking the GIL back after each few arenas waited up to the
           interpreter's switch interval (5 ms) each time beside a thread running Python
           (the server answering `initialize`), and the reserve, 8-12 ms of the kernel's
           work, took 40-50 ms and ran into the first document's analysis. */
        void *fresh[GPU_ASYNC_LSP_RESERVE_MAX];
        size_t size = gpu_async_lsp_arena_size;
        int want, made = 0, i;
        if (count > GPU_ASYNC_LSP_RESERVE_MAX)
            count = GPU_ASYNC_LSP_RESERVE_MAX;
        if (count > gpu_async_lsp_keep)
            gpu_async_lsp_keep = count;
        want = count - gpu_async_lsp_held_count;
        Py_BEGIN_ALLOW_THREADS  /* the kernel makes the pages; the process goes on */
        while (made < want) {
            void *p = gpu_async_lsp_mapped(size);
            if (p == NULL)
                break;  /* no memory */
            fresh[made++] = p;
        }
        if (heap_bytes > 0) {
            /* Allocated, one byte of each page written, freed: kept by the heap (its
               settings: heap.prepare_heap), resident from now on. Volatile, so that the
               compiler keeps the writes and with them the allocation. */
            volatile char *block = (volatile char *)malloc(heap_bytes);
            size_t page = (size_t)sysconf(_SC_PAGESIZE), at;
            if (block != NULL) {
                for (at = 0; at < heap_bytes; at += page)
                    block[at] = 0;
                free((void *)block);
            }
        }
        Py_END_ALLOW_THREADS
        for (i = 0; i < made; i++) {
            if (gpu_async_lsp_held_count < gpu_async_lsp_keep)
                gpu_async_lsp_held[gpu_async_lsp_held_count++] = fresh[i];
            else
                munmap(fresh[i], size);  /* the reserve was dropped meanwhile */
        }
        return gpu_async_lsp_held_count;
    }
    static int gpu_async_lsp_populate_arenas(void) {
        PyObjectArenaAllocator allocator = {NULL, gpu_async_lsp_populated_arena,
                                            gpu_async_lsp_unmapped_arena};
        PyObject_SetArenaAllocator(&allocator);
        return 1;
    }
    #else
    static int gpu_async_lsp_populate_arenas(void) { return 0; }
    static int gpu_async_lsp_reserve_arenas(int count, size_t heap_bytes) {
        (void)count; (void)heap_bytes; return 0;
    }
    static void gpu_async_lsp_drop_reserve(void) {}
    #endif
    """
    int _populate_arenas "gpu_async_lsp_populate_arenas"() noexcept
    int _reserve_arenas "gpu_async_lsp_reserve_arenas"(int count, size_t heap_bytes) noexcept
    void _drop_reserve "gpu_async_lsp_drop_reserve"() noexcept
