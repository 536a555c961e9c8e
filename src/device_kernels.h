/* The GPU's strided kernels: their arguments, and what one thread does.
 *
 * Shared by three readers, so that one piece of code is what runs and what
 * is tested:
 * - device_kernels.cu, the CUDA C source, compiled to PTX (device_kernels.ptx)
 *   and loaded through the driver by device_cuda.c;
 * - kernel_args.c, which turns a strided fill or copy into these arguments
 *   (device_cuda_copy.c fills a negation's itself);
 * - the tests' fake CUDA driver (tests/c/fake_cuda.c), which runs a launch by
 *   calling the per-thread functions below for every block and thread of
 *   the grid, over its own memory.
 * It is C that nvcc compiles as well: no library calls, no C11-only syntax.
 * Where a kernel dereferences a device address, GTS_KERNEL_ADDRESS turns
 * it into a pointer: the identity on a GPU; the fake driver defines its own
 * translation before including this header.
 *
 * A kernel array is a strided array of *words* of 1, 2, 4 or 8 bytes: an
 * element of itemsize bytes is itemsize / unit words along an extra
 * innermost dimension, so one kernel serves every itemsize, and addresses
 * that are only byte-aligned still work. Dimensions are innermost first,
 * with extent 1 dropped and neighbours merged where the strides allow
 * (kernel_args.c). */
#ifndef GTSTORE_DEVICE_KERNELS_H
#define GTSTORE_DEVICE_KERNELS_H

#ifdef __CUDACC__
#define GTS_KERNEL_FN __device__ static __forceinline__
#else
#define GTS_KERNEL_FN static inline
#endif

#ifndef GTS_KERNEL_ADDRESS
#define GTS_KERNEL_ADDRESS(address) ((char *)(address))
#endif

/* Dimensions of one kernel array: more is rare after merging, and the
 * arguments stay small enough to pass by value (CUDA's 4 KiB of
 * parameters) and to keep a batch's table compact. */
#define GTS_KERNEL_NDIM 8
/* Threads per block, and the most blocks a launch asks for along x (the
 * threads then stride over the rest). */
#define GTS_KERNEL_THREADS 256
#define GTS_KERNEL_MAX_BLOCKS 4096
/* The most arrays of a batch in one launch: CUDA's limit of gridDim.y. */
#define GTS_KERNEL_MAX_BATCH 65535

typedef struct gts_kernel_array {
    unsigned long long dst, src; /* device addresses of word 0 (src: 0 for a fill) */
    long long count;             /* words: the product of shape */
    int ndim;                    /* 0 (one word) to GTS_KERNEL_NDIM */
    int unit;                    /* bytes per word: 1, 2, 4 or 8 */
    long long shape[GTS_KERNEL_NDIM];
    long long dst_strides[GTS_KERNEL_NDIM]; /* bytes */
    long long src_strides[GTS_KERNEL_NDIM]; /* bytes */
} gts_kernel_array;

/* A fill writes the item's words in turn: word w of the item to the words
 * whose innermost index is w modulo `words` (kernel_args.c keeps the
 * element's words innermost). */
typedef struct gts_kernel_fill {
    gts_kernel_array array;
    int words;                   /* itemsize / unit */
    unsigned long long item[2];  /* the item's bytes (itemsize <= 16) */
} gts_kernel_fill;

/* Where a thread is, as CUDA's built-in variables say. */
typedef struct gts_kernel_thread {
    unsigned long long first;  /* blockIdx.x * blockDim.x + threadIdx.x */
    unsigned long long stride; /* gridDim.x * blockDim.x */
} gts_kernel_thread;

/* The byte offsets of word `index` from dst and src. 32-bit arithmetic
 * where the array is small enough: division is much cheaper on a GPU. */
GTS_KERNEL_FN void gts_kernel_offsets(const gts_kernel_array *a, long long index,
                                      long long *dst, long long *src)
{
    long long d = 0, s = 0;
    if (a->count <= 0xffffffffLL) {
        unsigned int rest = (unsigned int)index;
        for (int k = 0; k < a->ndim; ++k) {
            unsigned int extent = (unsigned int)a->shape[k];
            long long i = (long long)(rest % extent);
            rest /= extent;
            d += i * a->dst_strides[k];
            s += i * a->src_strides[k];
        }
    } else {
        long long rest = index;
        for (int k = 0; k < a->ndim; ++k) {
            long long i = rest % a->shape[k];
            rest /= a->shape[k];
            d += i * a->dst_strides[k];
            s += i * a->src_strides[k];
        }
    }
    *dst = d;
    *src = s;
}

/* Stores the low `unit` bytes of `value` at `p`. */
GTS_KERNEL_FN void gts_kernel_store(char *p, int unit, unsigned long long value)
{
    switch (unit) {
    case 1: *(unsigned char *)p = (unsigned char)value; break;
    case 2: *(unsigned short *)p = (unsigned short)value; break;
    case 4: *(unsigned int *)p = (unsigned int)value; break;
    default: *(unsigned long long *)p = value; break;
    }
}

GTS_KERNEL_FN unsigned long long gts_kernel_load(const char *p, int unit)
{
    switch (unit) {
    case 1: return *(const unsigned char *)p;
    case 2: return *(const unsigned short *)p;
    case 4: return *(const unsigned int *)p;
    default: return *(const unsigned long long *)p;
    }
}

/* One thread of a copy: its words of `a`, striding over the grid. */
GTS_KERNEL_FN void gts_kernel_copy_thread(const gts_kernel_array *a, gts_kernel_thread t)
{
    char *dst = GTS_KERNEL_ADDRESS(a->dst);
    const char *src = GTS_KERNEL_ADDRESS(a->src);
    for (unsigned long long i = t.first; i < (unsigned long long)a->count; i += t.stride) {
        long long d, s;
        gts_kernel_offsets(a, (long long)i, &d, &s);
        gts_kernel_store(dst + d, a->unit, gts_kernel_load(src + s, a->unit));
    }
}

/* The word of the item that word `index` of a fill receives. */
GTS_KERNEL_FN unsigned long long gts_kernel_item_word(const gts_kernel_fill *f, long long index)
{
    int w = f->words == 1 ? 0 : (int)(index % f->words);
    int byte = w * f->array.unit;
    unsigned long long word = f->item[byte / 8] >> (8 * (byte % 8));
    return word;
}

/* One thread of a fill. */
GTS_KERNEL_FN void gts_kernel_fill_thread(const gts_kernel_fill *f, gts_kernel_thread t)
{
    const gts_kernel_array *a = &f->array;
    char *dst = GTS_KERNEL_ADDRESS(a->dst);
    for (unsigned long long i = t.first; i < (unsigned long long)a->count; i += t.stride) {
        long long d, s;
        gts_kernel_offsets(a, (long long)i, &d, &s);
        gts_kernel_store(dst + d, a->unit, gts_kernel_item_word(f, (long long)i));
    }
}

/* A negation in place of `count` packed values of `size` bytes each (a
 * vector component that a cube edge turns, negated in a message buffer in
 * device memory: halo_negate.c is the same on the host). Floats flip their
 * sign bit (complex values are two floats each); integers take the two's
 * complement, wrapping. Byte by byte, so that a value need not be aligned
 * (a message packs fields of several dtypes one after the other), and in
 * little-endian order, the GPU's: the sign bit is in the value's last byte,
 * the carry runs from its first. */
typedef struct gts_kernel_negate {
    unsigned long long data; /* device address of value 0 */
    long long count;         /* values */
    int size;                /* bytes per value: 1, 2, 4 or 8 */
    int twos_complement;     /* integers; else the sign bit (floats) */
} gts_kernel_negate;

/* One thread of a negation: its values, striding over the grid. */
GTS_KERNEL_FN void gts_kernel_negate_thread(const gts_kernel_negate *n, gts_kernel_thread t)
{
    unsigned char *data = (unsigned char *)GTS_KERNEL_ADDRESS(n->data);
    for (unsigned long long i = t.first; i < (unsigned long long)n->count; i += t.stride) {
        unsigned char *value = data + i * (unsigned long long)n->size;
        if (!n->twos_complement) {
            value[n->size - 1] ^= 0x80;
            continue;
        }
        unsigned int carry = 1; /* -x = ~x + 1 */
        for (int b = 0; b < n->size; ++b) {
            unsigned int sum = (unsigned int)(unsigned char)~value[b] + carry;
            value[b] = (unsigned char)sum;
            carry = sum >> 8;
        }
    }
}

#endif
