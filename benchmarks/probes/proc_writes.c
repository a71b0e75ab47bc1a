/* LD_PRELOAD shim: prints every open of a /proc path for writing (what CUDA's start writes in a
 * process's own /proc folder). Build: gcc -shared -fPIC -O1 -o proc_writes.so proc_writes.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void note(const char *fn, const char *path, int flags) {
  if (path && strncmp(path, "/proc/", 6) == 0 && (flags & (O_WRONLY | O_RDWR))) {
    char buf[512]; int n = snprintf(buf, sizeof buf, "PROCWRITE %s %s flags=%x\n", fn, path, flags);
    write(2, buf, n);
  }
}
#define WRAP_OPEN(name) int name(const char *p, int f, ...) { va_list a; va_start(a, f); int m = va_arg(a, int); va_end(a); \
  note(#name, p, f); int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, #name); return real(p, f, m); }
#define WRAP_OPENAT(name) int name(int d, const char *p, int f, ...) { va_list a; va_start(a, f); int m = va_arg(a, int); va_end(a); \
  note(#name, p, f); int (*real)(int, const char *, int, ...) = dlsym(RTLD_NEXT, #name); return real(d, p, f, m); }
WRAP_OPEN(open) WRAP_OPEN(open64) WRAP_OPENAT(openat) WRAP_OPENAT(openat64)
int __open_2(const char *p, int f) { note("__open_2", p, f); int (*r)(const char *, int) = dlsym(RTLD_NEXT, "__open_2"); return r(p, f); }
int __open64_2(const char *p, int f) { note("__open64_2", p, f); int (*r)(const char *, int) = dlsym(RTLD_NEXT, "__open64_2"); return r(p, f); }
FILE *fopen(const char *p, const char *m) { if (p && strncmp(p, "/proc/", 6) == 0 && (strchr(m, 'w') || strchr(m, '+') || strchr(m, 'a'))) { char b[512]; int n = snprintf(b, sizeof b, "PROCWRITE fopen %s %s\n", p, m); write(2, b, n);} FILE *(*r)(const char *, const char *) = dlsym(RTLD_NEXT, "fopen"); return r(p, m); }
FILE *fopen64(const char *p, const char *m) { if (p && strncmp(p, "/proc/", 6) == 0 && (strchr(m, 'w') || strchr(m, '+') || strchr(m, 'a'))) { char b[512]; int n = snprintf(b, sizeof b, "PROCWRITE fopen64 %s %s\n", p, m); write(2, b, n);} FILE *(*r)(const char *, const char *) = dlsym(RTLD_NEXT, "fopen64"); return r(p, m); }
