/* Startup, the heap's _sbrk and semihosting for the C demo firmware: what a newlib
 * firmware has in some form already. Nothing here knows about heapsnap. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "board.h"

extern uint32_t _data_start, _data_end, _data_load, _bss_start, _bss_end;
extern char _heap_start, _heap_end, _stack_top;

int main(void);

/* The reset handler is where every stack ends: it cannot be unwound. */
__attribute__((noreturn, used)) void reset_handler(void) {
    memcpy(&_data_start, &_data_load, (size_t)((char *)&_data_end - (char *)&_data_start));
    memset(&_bss_start, 0, (size_t)((char *)&_bss_end - (char *)&_bss_start));
    int status = main();
    semihosting_exit(status == 0);
}

static void fault_handler(void) {
    semihosting_write0("firmware-c: fault\n");
    semihosting_exit(0);
}

__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &_stack_top,   (void *)reset_handler, (void *)fault_handler, (void *)fault_handler,
    (void *)fault_handler, (void *)fault_handler, (void *)fault_handler,
};

/* newlib's malloc asks for memory here. */
void *_sbrk(ptrdiff_t incr) {
    static char *brk = &_heap_start;
    if (incr > &_heap_end - brk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    char *old = brk;
    brk += incr;
    return old;
}

/* ARM semihosting: the operation in r0, its argument block in r1, `bkpt 0xAB`. */
static int semihost(int op, const void *arg) {
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int semihosting_open(const char *name) {
    const uint32_t args[3] = {(uint32_t)name, 6 /* "wb" */, strlen(name)};
    return semihost(0x01 /* SYS_OPEN */, args);
}

int semihosting_write(int fd, const void *bytes, size_t len) {
    const uint32_t args[3] = {(uint32_t)fd, (uint32_t)bytes, len};
    return semihost(0x05 /* SYS_WRITE */, args) == 0 ? 0 : -1;
}

int semihosting_close(int fd) {
    const uint32_t args[1] = {(uint32_t)fd};
    return semihost(0x02 /* SYS_CLOSE */, args);
}

void semihosting_write0(const char *text) { semihost(0x04 /* SYS_WRITE0 */, text); }

void semihosting_exit(int success) {
    /* ADP_Stopped_ApplicationExit: QEMU exits 0; anything else: 1. */
    semihost(0x18 /* SYS_EXIT */, (const void *)(success ? 0x20026 : 0x20023));
    for (;;) {
    }
}

/* -funwind-tables makes every index entry name one of ARM's personality routines, and
 * the linker then pulls in libgcc's whole exception unwinder (~3.8 KB here) for a C
 * firmware that never throws. heapsnap's walker reads the tables itself and calls no
 * personality routine: empty ones keep libgcc's out. (Not in a C++ firmware that uses
 * exceptions.) */
void __aeabi_unwind_cpp_pr0(void) {}
void __aeabi_unwind_cpp_pr1(void) {}
void __aeabi_unwind_cpp_pr2(void) {}
