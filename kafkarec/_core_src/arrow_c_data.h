/* arrow_c_data.h: part of kafkarec._core (included by the .pxi that declares it). */
#ifndef KAFKAREC_ARROW_C_DATA_H
#define KAFKAREC_ARROW_C_DATA_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

/* The Arrow C data interface (arrow.apache.org/docs/format/CDataInterface.html). */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format; const char *name; const char *metadata; int64_t flags;
    int64_t n_children; struct ArrowSchema **children; struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *); void *private_data;
};
struct ArrowArray {
    int64_t length; int64_t null_count; int64_t offset; int64_t n_buffers; int64_t n_children;
    const void **buffers; struct ArrowArray **children; struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *); void *private_data;
};
#endif

#endif /* KAFKAREC_ARROW_C_DATA_H */
