package dockertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// swapperProgram exchanges two names atomically (renameat2 with
// RENAME_EXCHANGE) every few tens of microseconds, until SIGTERM; then it prints how
// many exchanges it made. Where the file system cannot exchange, it falls
// back to four plain renames per round.
const swapperProgram = `#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif
static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }
int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: swapper A B LOG\n"); return 2; }
	signal(SIGTERM, on_term);
	unsigned long n = 0;
	int exchange = 1;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.swap", argv[1]);
	FILE *log = fopen(argv[3], "w");
	if (!log) { perror(argv[3]); return 1; }
	fprintf(log, "started\n");
	fflush(log);
	struct timespec pause = {0, 20000};
	while (!stop) {
		if (exchange && syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
			exchange = 0;
		}
		if (!exchange) {
			rename(argv[1], tmp); rename(argv[2], argv[1]);
			rename(argv[1], argv[2]); rename(tmp, argv[1]);
		}
		n++;
		nanosleep(&pause, NULL);
	}
	fprintf(log, "swaps=%lu exchange=%d\n", n, exchange);
	fclose(log);
	return 0;
}
`

// Swapper compiles the swapper, statically.
func Swapper(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "swapper.c")
	os.WriteFile(src, []byte(swapperProgram), 0o644)
	bin := filepath.Join(dir, "swapper")
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compile the swapper (gcc and libc6-dev are needed): %v\n%s", err, out)
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
