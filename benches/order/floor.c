#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
/* The physical floor of a warm `proem build`: open, stat, read and close the
   files proem reads (absolute paths, one a line in argv[1]), then write as
   many bytes as the prompt (argv[2]) to stdout. benches/order/floor.sh makes
   the list and times it. */
int main(int argc, char **argv) {
    static char buf[1 << 20]; size_t n = 0;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 0;
    FILE *list = fopen(argv[1], "r"); char line[4096];
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = 0;
        int fd = open(line, O_RDONLY | O_CLOEXEC);
        if (fd < 0) { perror(line); continue; }
        struct stat st; fstat(fd, &st);
        if (st.st_size > (off_t)(sizeof buf - n)) st.st_size = sizeof buf - n;
        ssize_t r = read(fd, buf + n, st.st_size);
        if (r > 0) n += r;
        close(fd);
    }
    if (n > bytes) n = bytes;
    write(1, buf, n);
    return 0;
}
