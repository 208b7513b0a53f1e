/* filtergen: run when the launcher is built, it writes seccomp_filters.h, the filters that
 * `maf-launch run` loads, as C data. libseccomp builds them here, from the same policy code
 * (guest/seccomp.c) the launcher links, so a run need not: building the filter takes most of
 * a millisecond, on the path between fork and exec.
 *
 * The filter names the supervisor's pid, which only the run knows. So each variant is built
 * for two pids, and the two must differ only in the instructions that compare with pid or
 * -pid: those positions are recorded for the run to fill in. The result is then checked
 * against libseccomp for a range of other pids. Any other difference fails the build. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/filter.h>

#include "contain.h"

#define MAX_INSNS 1024
#define MAX_SLOTS 32

/* Pids that appear nowhere else in the filter. */
#define PID_A 1000003
#define PID_B 2000029

static const int check_pids[] = {2, 3, 300, 4242, 32767, 32768, 65536, 4194304, 1073741823,
				 2147483647};

struct variant {
	struct sock_filter insns[MAX_INSNS];
	size_t len;
	unsigned short pid_at[MAX_SLOTS], negpid_at[MAX_SLOTS];
	size_t npid, nnegpid;
};

static void fail(const char *fmt, int egress, int scoped, const char *detail)
{
	fprintf(stderr, "filtergen: egress %s, signals %s: ", egress ? "open" : "closed",
		scoped ? "scoped" : "unscoped");
	fprintf(stderr, fmt, detail);
	fputc('\n', stderr);
	exit(1);
}

static size_t build(int egress, int scoped, int pid, struct sock_filter *f)
{
	struct mafl_policy p = {.seccomp = 1, .egress_open = egress, .supervisor = pid,
				.signals_scoped = scoped};
	ssize_t n = mafl_seccomp_build_bpf(&p, f, MAX_INSNS);

	if (n <= 0)
		fail("libseccomp cannot build the filter: %s", egress, scoped,
		     strerror(n < 0 ? (int)-n : EINVAL));
	return (size_t)n;
}

/* 1 if v with pid filled in is the filter libseccomp builds for pid now. */
static int same_as_libseccomp(const struct variant *v, int egress, int scoped, int pid)
{
	static struct sock_filter b[MAX_INSNS], c[MAX_INSNS];

	memcpy(b, v->insns, v->len * sizeof(*b));
	mafl_seccomp_fill_pid(b, v->pid_at, v->npid, v->negpid_at, v->nnegpid, pid);
	return build(egress, scoped, pid, c) == v->len && memcmp(b, c, v->len * sizeof(*b)) == 0;
}

static void make(int egress, int scoped, struct variant *v)
{
	static struct sock_filter b[MAX_INSNS];
	size_t i, j, nb;

	v->len = build(egress, scoped, PID_A, v->insns);
	nb = build(egress, scoped, PID_B, b);
	if (nb != v->len)
		fail("%s", egress, scoped, "the filter's length depends on the supervisor's pid");
	v->npid = v->nnegpid = 0;
	for (i = 0; i < v->len; i++) {
		struct sock_filter *x = &v->insns[i], *y = &b[i];

		if (memcmp(x, y, sizeof(*x)) == 0)
			continue;
		if (x->code != y->code || x->jt != y->jt || x->jf != y->jf)
			fail("%s", egress, scoped, "the filter's layout depends on the supervisor's pid");
		if (x->k == (uint32_t)PID_A && y->k == (uint32_t)PID_B && v->npid < MAX_SLOTS)
			v->pid_at[v->npid++] = (unsigned short)i;
		else if (x->k == (uint32_t)-PID_A && y->k == (uint32_t)-PID_B &&
			 v->nnegpid < MAX_SLOTS)
			v->negpid_at[v->nnegpid++] = (unsigned short)i;
		else
			fail("%s", egress, scoped, "an instruction other than a pid comparison "
			     "depends on the supervisor's pid");
	}
	if (v->npid == 0)
		fail("%s", egress, scoped, "no instruction names the supervisor's pid");
	for (j = 0; j < sizeof(check_pids) / sizeof(check_pids[0]); j++)
		if (!same_as_libseccomp(v, egress, scoped, check_pids[j]))
			fail("%s", egress, scoped, "filling in a pid does not give libseccomp's filter");
	/* Blank the pids, so nothing of the build's own runs is left in the data. */
	mafl_seccomp_fill_pid(v->insns, v->pid_at, v->npid, v->negpid_at, v->nnegpid, 0);
}

static void print_slots(const char *name, int e, int s, const unsigned short *at, size_t n)
{
	size_t i;

	printf("static const unsigned short mafl_filter_%d%d_%s[] = {", e, s, name);
	for (i = 0; i < n; i++)
		printf("%s%u", i ? ", " : "", at[i]);
	printf("%s};\n", n ? "" : "0");
}

/* The PFC text libseccomp prints for the policy `maf-launch policy` shows (egress e, the
 * signals not scoped), as C: the text cut where the supervisor's pid (PID_A) or -pid stands,
 * each cut marked 1 or 2 for the launcher to fill in. */
static void print_pfc(int e)
{
	struct mafl_policy p = {.seccomp = 1, .egress_open = e, .supervisor = PID_A};
	char pid[16], negpid[16], *text, *q, *start;
	size_t nseg = 0, i;
	unsigned char sub[4096];
	FILE *f = tmpfile();
	long len;

	snprintf(pid, sizeof(pid), "%u", (uint32_t)PID_A);
	snprintf(negpid, sizeof(negpid), "%u", (uint32_t)-PID_A);
	if (!f || mafl_seccomp_export_pfc(&p, fileno(f)) < 0 || fseek(f, 0, SEEK_END) != 0 ||
	    (len = ftell(f)) <= 0 || !(text = calloc((size_t)len + 1, 1)) ||
	    fseek(f, 0, SEEK_SET) != 0 || fread(text, 1, (size_t)len, f) != (size_t)len)
		fail("%s", e, 0, "libseccomp cannot print the PFC");
	fclose(f);
	printf("static const char *const mafl_pfc_%d_seg[] = {\n\t\"", e);
	for (q = start = text; *q; q++) {
		size_t n = strspn(q, "0123456789");
		int kind = 0;

		if (n && (q == text || q[-1] < '0' || q[-1] > '9')) {
			kind = n == strlen(pid) && !memcmp(q, pid, n) ? 1 :
			       n == strlen(negpid) && !memcmp(q, negpid, n) ? 2 : 0;
		}
		if (kind) {
			if (nseg == sizeof(sub))
				fail("%s", e, 0, "the PFC names the pid too often");
			sub[nseg++] = (unsigned char)kind;
			printf("\",\n\t\"");
			q += n - 1;
			continue;
		}
		if (*q == '\n')
			printf("\\n\"\n\t\"");
		else if (*q == '"' || *q == '\\')
			printf("\\%c", *q);
		else
			putchar(*q);
	}
	printf("\",\n};\n");
	sub[nseg++] = 0;
	printf("static const unsigned char mafl_pfc_%d_sub[] = {", e);
	for (i = 0; i < nseg; i++)
		printf("%s%u", i ? ", " : "", sub[i]);
	printf("};\n\n");
	free(text);
	(void)start;
}

/* filtergen --check PID...: for each pid, with and without egress and Landlock's signal
 * scope, filling the pid into the prebuilt filter gives what libseccomp builds now. */
static int check(int argc, char **argv)
{
	static struct variant v[2][2];
	int e, s, i, bad = 0;

	for (e = 0; e < 2; e++)
		for (s = 0; s < 2; s++)
			make(e, s, &v[e][s]);
	for (i = 0; i < argc; i++) {
		char *end;
		long pid = strtol(argv[i], &end, 10);

		if (*end || pid < 2 || pid > 0x3fffffff) {
			fprintf(stderr, "filtergen: --check takes pids from 2, not '%s'\n", argv[i]);
			return 2;
		}
		for (e = 0; e < 2; e++)
			for (s = 0; s < 2; s++) {
				int ok = same_as_libseccomp(&v[e][s], e, s, (int)pid);

				printf("supervisor %ld, egress %s, signals %s: %s\n", pid,
				       e ? "open" : "closed", s ? "scoped" : "not scoped",
				       ok ? "the prebuilt filter is libseccomp's" : "DIFFERENT");
				bad |= !ok;
			}
	}
	return bad;
}

int main(int argc, char **argv)
{
	static struct variant v[2][2];
	size_t max = 0, i;
	int e, s;

	if (argc > 1 && strcmp(argv[1], "--check") == 0)
		return check(argc - 2, argv + 2);
	for (e = 0; e < 2; e++)
		for (s = 0; s < 2; s++) {
			make(e, s, &v[e][s]);
			if (v[e][s].len > max)
				max = v[e][s].len;
		}
	printf("/* Generated by guest/gen/filtergen.c when the launcher is built: do not edit. */\n"
	       "#define MAFL_PREBUILT_MAX %zu\n\n"
	       "struct mafl_prebuilt {\n"
	       "\tconst struct sock_filter *insns;\n"
	       "\tunsigned short len;\n"
	       "\tunsigned char npid, nnegpid;\n"
	       "\tconst unsigned short *pid_at, *negpid_at; /* k = pid, k = -pid */\n"
	       "};\n\n", max);
	for (e = 0; e < 2; e++)
		for (s = 0; s < 2; s++) {
			struct variant *x = &v[e][s];

			printf("/* egress %s, signals %s by Landlock */\n", e ? "open" : "closed",
			       s ? "scoped" : "not scoped");
			printf("static const struct sock_filter mafl_filter_%d%d[] = {\n", e, s);
			for (i = 0; i < x->len; i++)
				printf("\t{0x%04x, %u, %u, 0x%08x},\n", x->insns[i].code,
				       x->insns[i].jt, x->insns[i].jf, x->insns[i].k);
			printf("};\n");
			print_slots("pid", e, s, x->pid_at, x->npid);
			print_slots("negpid", e, s, x->negpid_at, x->nnegpid);
			printf("\n");
		}
	printf("static const struct mafl_prebuilt mafl_prebuilt[2][2] = {\n");
	for (e = 0; e < 2; e++) {
		printf("\t{\n");
		for (s = 0; s < 2; s++)
			printf("\t\t{mafl_filter_%d%d, %zu, %zu, %zu, mafl_filter_%d%d_pid, "
			       "mafl_filter_%d%d_negpid},\n", e, s, v[e][s].len, v[e][s].npid,
			       v[e][s].nnegpid, e, s, e, s);
		printf("\t},\n");
	}
	printf("};\n\n");
	printf("/* The PFC of the filters above for egress closed and open, signals not scoped, cut\n"
	       " * where the supervisor's pid (1) or -pid (2) stands. */\n"
	       "struct mafl_pfc {\n"
	       "\tconst char *const *seg;\n"
	       "\tconst unsigned char *sub; /* after seg[i]: 0 nothing, 1 pid, 2 -pid */\n"
	       "\tsize_t nseg;\n"
	       "};\n\n");
	for (e = 0; e < 2; e++)
		print_pfc(e);
	printf("static const struct mafl_pfc mafl_pfc[2] = {\n");
	for (e = 0; e < 2; e++)
		printf("\t{mafl_pfc_%d_seg, mafl_pfc_%d_sub, sizeof(mafl_pfc_%d_sub)},\n", e, e, e);
	printf("};\n");
	return ferror(stdout) || fflush(stdout) != 0;
}
