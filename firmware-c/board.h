/* Semihosting (QEMU's -semihosting, or a debug probe): files and console on the host. */
#ifndef BOARD_H
#define BOARD_H
#include <stddef.h>

/* Create (truncate) a host file for binary writing; -1 on failure. */
int semihosting_open(const char *name);
/* Write all of `bytes`; 0 on success. */
int semihosting_write(int fd, const void *bytes, size_t len);
int semihosting_close(int fd);
/* Print a NUL-terminated string on the host's console. */
void semihosting_write0(const char *text);
/* End the run: QEMU exits with 0 when `success`, else 1. */
__attribute__((noreturn)) void semihosting_exit(int success);

#endif
