/* Probe for tests/integration/test_seccomp_live.py: makes one getpid through another syscall
 * ABI of x86-64 and prints what it returned, "ABI ret=N errno=E". Under the default filter the
 * process should never get to print: libseccomp's x86_64 filter sends any number with the x32
 * bit (0x40000000) and any call through int 0x80 (AUDIT_ARCH_I386) to the bad-arch action,
 * KILL_PROCESS. Usage: seccomp_abi native|x32|int80 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define X32_SYSCALL_BIT 0x40000000L
#define I386_NR_GETPID 20

static long int80_getpid(void)
{
#if defined(__x86_64__)
	long ret;

	/* int 0x80 enters the i386 syscall table even from a 64-bit process; the kernel
	 * zeroes r8-r11 on the way back. */
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"((long)I386_NR_GETPID)
			 : "memory", "r8", "r9", "r10", "r11");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	errno = ENOSYS;
	return -1;
#endif
}

int main(int argc, char **argv)
{
	long ret;

	if (argc != 2) {
		fprintf(stderr, "usage: seccomp_abi native|x32|int80\n");
		return 2;
	}
	printf("start pid=%ld\n", (long)getpid());
	fflush(stdout);
	errno = 0;
	if (strcmp(argv[1], "native") == 0)
		ret = syscall(SYS_getpid);
	else if (strcmp(argv[1], "x32") == 0)
		ret = syscall(X32_SYSCALL_BIT | SYS_getpid);
	else if (strcmp(argv[1], "int80") == 0)
		ret = int80_getpid();
	else {
		fprintf(stderr, "seccomp_abi: unknown ABI '%s'\n", argv[1]);
		return 2;
	}
	printf("%s ret=%ld errno=%d\n", argv[1], ret, ret < 0 ? errno : 0);
	return 0;
}
