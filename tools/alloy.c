/* SPDX-License-Identifier: MIT */
/* alloy.c - the `alloy` command, one entry point for users:
 *
 *   alloy run [--stats[=full|json]] [--stats-file FILE] [--follow-children] [--prof]
 *             [--leaks] [--timeline FILE] [--live] [--conf K:V,...] -- CMD ARGS...
 *       exec CMD with LD_PRELOAD=liballoy.so.0 and ALLOY_CONF set
 *   alloy stats [--summary] FILE.json [FILE2.json]
 *       a saved JSON report as tables, or the change between two (alloy_stats.c)
 *   alloy prof [--top N] [--folded] [--alloc] [--objects] FILE.heap
 *       a heap profile, symbolised (alloy_prof.c)
 *   alloy plot [--force] [-o OUT] FILE [FILE2]   a timeline's chart and summary (alloy_plot.c)
 *   alloy top [--once|--json] PID      a process's live statistics (alloy_top.c)
 *   alloy bench ARGS...     the benchmark suite (bench/run.py), build tree only
 *   alloy sim ARGS...       the alloy-sim simulator
 *   alloy settings [--markdown|--man]   the ALLOY_CONF keys   (alloy_describe.c)
 *   alloy names [--markdown|--man]      the alloy_ctl names   (alloy_describe.c)
 *   alloy --help | --version
 *
 * Where things are: alloy_util.c says how the command finds its own
 * directory (self_dir) and liballoy.so.0 (find_library); alloy-sim and the
 * bench programs are looked for in that directory, beside the command.
 *
 * Exit status: `run`, `bench` and `sim` replace themselves with the program
 * (exec), so its status passes through.  2: bad usage.  1: a part is missing
 * (no liballoy.so, no alloy-sim, no benchmark suite).  126/127: CMD could not
 * be executed / was not found, as in the shell.
 *
 * The command itself uses only libc and does not run on alloy.  (`settings`
 * and `names` load liballoy.so with dlopen to read its tables; they do not
 * replace the command's malloc.  `stats` compiles in the library's report
 * layout, src/report.c with emit.c, fmt.c and os.c, which use libc only.)
 * Each subcommand that is more than a few lines has a file of its own,
 * alloy_<name>.c, with its entry point declared in alloy_<name>.h; the
 * helpers that these files and this one share are in alloy_util.{h,c}.
 *
 * Invariants: this file (the dispatcher) calls the subcommand files and
 * alloy_util, the subcommand files call alloy_util, and nothing calls back
 * up: tests/layers/check_layers.py fails on a cycle among the files of
 * tools/, and on a header that declares another file's functions.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloy.h>

#include "alloy_describe.h"
#include "alloy_plot.h"
#include "alloy_prof.h"
#include "alloy_stats.h"
#include "alloy_top.h"
#include "alloy_util.h"

#ifndef ALLOY_TOOL_SOURCE_DIR
#define ALLOY_TOOL_SOURCE_DIR "" /* the source tree, for bench/run.py */
#endif

static const char usage_text[] =
    "usage: alloy COMMAND [ARGS...]\n"
    "\n"
    "  alloy run [--stats[=full|json]] [--stats-file FILE] [--follow-children]\n"
    "            [--prof] [--leaks] [--timeline FILE] [--live] [--conf K:V,...]\n"
    "            -- CMD [ARGS...]\n"
    "      Run CMD on the alloy allocator (LD_PRELOAD=" ALLOY_TOOL_SONAME ").\n"
    "      --stats        print a summary of alloy's statistics on stderr when CMD\n"
    "                     exits (adds stats_print:true to ALLOY_CONF)\n"
    "      --stats=full   the full report, with tables of heaps, NUMA nodes and\n"
    "                     size classes (also adds stats_print_opts:f)\n"
    "      --stats=json   the report as JSON, for alloy stats (stats_print_opts:J)\n"
    "      --stats-file FILE  the report into FILE, never mixed with CMD's output\n"
    "                     (stats_file:FILE; implies --stats); %p becomes the pid;\n"
    "                     a file that exists is refused\n"
    "      --follow-children  a report from every process of CMD's tree; without\n"
    "                     it, only CMD's own (stats_print_pid:<CMD's pid>)\n"
    "      --prof         heap profiling, with a profile written when CMD exits\n"
    "                     (prof:true,prof_final:true): alloy.<pid>.<seq>.f.heap\n"
    "      --leaks        report the allocations still live when CMD exits\n"
    "                     (prof_leak:true; add --conf prof_sample:1 to record them all)\n"
    "      --timeline FILE  record memory over time into FILE, one JSON line every\n"
    "                     timeline_ms (timeline_file:FILE); alloy plot FILE charts it\n"
    "      --live         publish live statistics for alloy top PID (stats_shm:true)\n"
    "      --conf K:V,... settings for ALLOY_CONF, e.g. --conf decay_ms:0,tcache:false;\n"
    "                     may be repeated; appended to an ALLOY_CONF already set\n"
    "      CMD's exit status is alloy's exit status.\n"
    "\n"
    "  alloy bench [smoke|short|full] [OPTIONS...]\n"
    "      The benchmark suite (bench/run.py) on this build tree; default mode\n"
    "      short.  OPTIONS go to the runner: alloy bench --help lists them.\n"
    "      Available from a build tree only (build/alloy), not after install.\n"
    "\n"
    "  alloy stats [--summary] FILE.json [FILE2.json]\n"
    "      A saved JSON report as alloy prints it, with tables; given two, the\n"
    "      change from the first to the second.  Bad input: one line, status 2.\n"
    "\n"
    "  alloy sim COMMAND [OPTIONS...]\n"
    "      The batch-policy simulator alloy-sim: alloy sim --help lists its commands.\n"
    "\n"
    "  alloy prof [--top N] [--folded] [--alloc] [--objects] FILE.heap\n"
    "      A heap profile, symbolised: the top N functions by live bytes, or\n"
    "      folded stacks for flame graphs.\n"
    "\n"
    "  alloy plot [--force] [-o OUT.svg|OUT.png] FILE [FILE2]\n"
    "      A timeline (alloy run --timeline) as a stacked area chart of resident\n"
    "      memory, with a summary of the phases where RSS grew fastest; given two,\n"
    "      both overlaid.  OUT defaults to FILE's name with .svg; a chart that\n"
    "      exists is replaced only with --force.  Needs python3-matplotlib.\n"
    "\n"
    "  alloy top [--once|--json] PID\n"
    "      The live statistics of a process run with --live (stats_shm:true),\n"
    "      refreshed every second; q quits.  --once prints one screen, --json the\n"
    "      snapshot.  Status 1 when PID publishes none.\n"
    "\n"
    "  alloy settings [--markdown|--man]\n"
    "      Every ALLOY_CONF key: type, default, accepted values and meaning.\n"
    "  alloy names [--markdown|--man]\n"
    "      Every alloy_ctl name: type, whether it can be written, and meaning.\n"
    "\n"
    "  alloy --help       this text\n"
    "  alloy --version    print the version\n";

static bool is_executable(const char *path) { return is_file(path) && access(path, X_OK) == 0; }

/* A --conf value: non-empty, every non-empty item of the form KEY:VALUE. */
static void check_conf(const char *v) {
    if (!*v)
        usage_error("--conf needs a value K:V[,K:V...]");
    for (const char *item = v; *item;) {
        size_t len = strcspn(item, ",");
        const char *colon = memchr(item, ':', len);
        if (len > 0 && (!colon || colon == item))
            usage_error("--conf wants KEY:VALUE items separated by commas, got '%s'", v);
        item += len;
        if (*item == ',')
            item++;
    }
}

/* dst (malloc'd or NULL) + sep + src; exits when memory runs out. */
static char *append(char *dst, const char *sep, const char *src) {
    size_t dl = dst ? strlen(dst) : 0;
    const char *s = dl ? sep : "";
    char *r = realloc(dst, dl + strlen(s) + strlen(src) + 1);
    if (!r)
        die(EXIT_MISSING, "out of memory");
    strcpy(r + dl, s);
    strcat(r, src);
    return r;
}

/* The file name that option (--timeline, --stats-file) gives, made
 * absolute (malloc'd): a path setting of ALLOY_CONF holds no comma and at
 * most 255 bytes (AY_CONF_PATH_MAX - 1). */
static char *absolute_file(const char *option, const char *file) {
    if (!*file || strchr(file, ','))
        usage_error("%s wants a file name without commas, got '%s'", option, file);
    char cwd[PATH_MAX], *abs = NULL;
    if (file[0] != '/') {
        if (!getcwd(cwd, sizeof cwd))
            die(EXIT_MISSING, "getcwd: %s", strerror(errno));
        abs = append(append(NULL, "", cwd), "/", file);
    } else {
        abs = append(NULL, "", file);
    }
    if (strlen(abs) > 255)
        usage_error("%s %s: the path is longer than 255 bytes", option, file);
    return abs;
}

/* The settings --stats-file FILE adds: stats_file:<FILE, absolute>.  A file
 * that exists is refused (the library would keep it and report on stderr);
 * with --follow-children every process writes a report, so the name needs
 * a %p. */
static char *stats_file_setting(const char *file, bool children) {
    char *abs = absolute_file("--stats-file", file);
    bool per_pid = strstr(abs, "%p") != NULL;
    if (!per_pid && access(abs, F_OK) == 0)
        usage_error("--stats-file %s: the file exists; not overwriting it", file);
    if (children && !per_pid)
        usage_error("--follow-children writes a report per process: put %%p (the pid) in "
                    "the --stats-file name, as in %s.%%p",
                    file);
    char *setting = append(NULL, "", "stats_file:");
    setting = append(setting, "", abs);
    free(abs);
    return setting;
}

/* The setting --timeline FILE adds: timeline_file:<FILE, absolute>.  A
 * timeline left by an earlier run is replaced; any other file is kept. */
static char *timeline_setting(const char *file) {
    char *abs = absolute_file("--timeline", file);
    FILE *old = fopen(abs, "r");
    if (old) {
        char head[32] = "";
        size_t n = fread(head, 1, sizeof head - 1, old);
        fclose(old);
        head[n] = 0;
        if (strncmp(head, "{\"alloy_timeline\":", 18) != 0)
            usage_error("--timeline %s: the file exists and is not an alloy timeline; "
                        "not overwriting it",
                        file);
        unlink(abs);
    }
    char *setting = append(NULL, "", "timeline_file:");
    setting = append(setting, "", abs);
    free(abs);
    return setting;
}

/* exec argv with the library first in LD_PRELOAD and ALLOY_CONF = conf
 * (when not NULL); returns only on failure, with the shell's status. */
static int run_exec(char **argv, const char *conf, const char *dir) {
    char lib[PATH_MAX];
    find_library(lib, sizeof lib, dir);
    if (strpbrk(lib, ": \t")) {
        error_line("%s contains a space or colon, which LD_PRELOAD cannot carry", lib);
        return EXIT_MISSING;
    }
    /* Ours goes first; a preload list already set is kept after it. */
    char *preload = append(NULL, "", lib);
    const char *old = getenv("LD_PRELOAD");
    if (old && *old)
        preload = append(preload, ":", old);
    if (setenv("LD_PRELOAD", preload, 1) != 0 || (conf && setenv("ALLOY_CONF", conf, 1) != 0)) {
        error_line("setenv: %s", strerror(errno));
        return EXIT_MISSING;
    }
    execvp(argv[0], argv);
    int e = errno;
    error_line("cannot run %s: %s", argv[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}

/* What the options of `alloy run` ask for. */
typedef struct run_opts {
    const char *stats;      /* the settings --stats adds */
    const char *stats_file; /* --stats-file's FILE */
    char *timeline;         /* the setting --timeline adds */
    char *extra;            /* the --conf values, in order */
    bool prof, leaks, live, children;
} run_opts_t;

/* conf (ALLOY_CONF as it was, or NULL) with the settings o adds after it. */
static char *run_conf(char *conf, run_opts_t *o) {
    if (o->children && !o->stats && !o->stats_file)
        usage_error("--follow-children is for the stats report: add --stats");
    if (o->stats_file && !o->stats)
        o->stats = "stats_print:true";
    if (o->extra)
        conf = append(conf, ",", o->extra);
    if (o->stats) {
        conf = append(conf, ",", o->stats);
        if (o->stats_file) {
            char *setting = stats_file_setting(o->stats_file, o->children);
            conf = append(conf, ",", setting);
            free(setting);
        }
        /* CMD runs in this process (exec): its pid is ours; its children,
         * which inherit ALLOY_CONF, have others and print nothing */
        char only[40];
        snprintf(only, sizeof only, "stats_print_pid:%u", o->children ? 0u : (unsigned)getpid());
        conf = append(conf, ",", only);
    }
    if (o->prof)
        conf = append(conf, ",", "prof:true,prof_final:true");
    if (o->leaks)
        conf = append(conf, ",", "prof_leak:true");
    if (o->timeline)
        conf = append(conf, ",", o->timeline);
    if (o->live)
        conf = append(conf, ",", "stats_shm:true");
    return conf;
}

static int cmd_run(int argc, char **argv, const char *dir) {
    run_opts_t o = {0};
    bool dashdash = false;
    char *conf = NULL;
    int i = 2;
    const char *env = getenv("ALLOY_CONF");
    if (env && *env)
        conf = append(conf, ",", env);
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            dashdash = true;
            i++;
            break;
        } else if (!strcmp(a, "--prof")) {
            o.prof = true;
        } else if (!strcmp(a, "--leaks")) {
            o.leaks = true;
        } else if (!strcmp(a, "--live")) {
            o.live = true;
        } else if (!strcmp(a, "--timeline")) {
            if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
                usage_error("--timeline needs a file name");
            o.timeline = timeline_setting(argv[++i]);
        } else if (!strncmp(a, "--timeline=", 11)) {
            o.timeline = timeline_setting(a + 11);
        } else if (!strcmp(a, "--stats") || !strcmp(a, "--stats=summary")) {
            o.stats = "stats_print:true";
        } else if (!strcmp(a, "--stats=full")) {
            o.stats = "stats_print:true,stats_print_opts:f";
        } else if (!strcmp(a, "--stats=json")) {
            o.stats = "stats_print:true,stats_print_opts:J";
        } else if (!strcmp(a, "--stats-file")) {
            if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
                usage_error("--stats-file needs a file name");
            o.stats_file = argv[++i];
        } else if (!strncmp(a, "--stats-file=", 13)) {
            o.stats_file = a + 13;
        } else if (!strcmp(a, "--follow-children")) {
            o.children = true;
        } else if (!strncmp(a, "--stats=", 8)) {
            usage_error("--stats takes summary, full or json, not '%s'", a + 8);
        } else if (!strcmp(a, "--conf")) {
            if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
                usage_error("--conf needs a value K:V[,K:V...]");
            check_conf(argv[++i]);
            o.extra = append(o.extra, ",", argv[i]);
        } else if (!strncmp(a, "--conf=", 7)) {
            check_conf(a + 7);
            o.extra = append(o.extra, ",", a + 7);
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (a[0] == '-') {
            usage_error("unknown option '%s'", a);
        } else {
            usage_error("expected -- before the command, as in: alloy run -- %s ...", a);
        }
    }
    if (!dashdash)
        usage_error("missing -- and a command, as in: alloy run -- CMD ARGS...");
    if (i >= argc)
        usage_error("missing command after --");
    return run_exec(argv + i, run_conf(conf, &o), dir);
}

static int cmd_bench(int argc, char **argv, const char *dir) {
    char runner[PATH_MAX], prog[PATH_MAX];
    path_join(runner, sizeof runner, ALLOY_TOOL_SOURCE_DIR, "bench/run.py");
    path_join(prog, sizeof prog, dir, "bench_sizes");
    if (!ALLOY_TOOL_SOURCE_DIR[0] || !is_file(runner) || !is_executable(prog)) {
        error_line("the benchmark suite is not available here (looked for %s and %s).\n"
                   "It runs from a build tree: build alloy from source and use build/alloy bench,\n"
                   "or tools/bench.sh / tools/headline.sh in the source tree.",
                   runner, prog);
        return EXIT_MISSING;
    }
    /* python3 run.py --build-dir DIR [--mode M] ARGS...  (+ NULL) */
    char **av = calloc((size_t)argc + 6, sizeof *av);
    if (!av)
        die(EXIT_MISSING, "out of memory");
    const char *python = is_executable("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    int n = 0, i = 2;
    av[n++] = (char *)python;
    av[n++] = runner;
    av[n++] = "--build-dir";
    av[n++] = (char *)dir;
    if (i < argc &&
        (!strcmp(argv[i], "smoke") || !strcmp(argv[i], "short") || !strcmp(argv[i], "full"))) {
        av[n++] = "--mode";
        av[n++] = argv[i++];
    }
    while (i < argc)
        av[n++] = argv[i++];
    av[n] = NULL;
    execvp(python, av);
    error_line("cannot run %s: %s", python, strerror(errno));
    return EXIT_MISSING;
}

static int cmd_sim(int argc, char **argv, const char *dir) {
    char sim[PATH_MAX];
    path_join(sim, sizeof sim, dir, "alloy-sim");
    if (!is_executable(sim)) {
        error_line("the simulator is not available here (looked for %s).\n"
                   "It is built in the build tree (cmake --build build --target alloy-sim); "
                   "use build/alloy sim.",
                   sim);
        return EXIT_MISSING;
    }
    argv[1] = sim; /* alloy-sim ARGS... */
    execv(sim, argv + 1);
    error_line("cannot run %s: %s", sim, strerror(errno));
    return EXIT_MISSING;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("alloy: no command given\n\n", stderr);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
        printf("alloy %s\n", ALLOY_VERSION_STRING);
        return 0;
    }
    char dir[PATH_MAX];
    static const char *const commands[] = {"run",  "bench", "sim",      "prof", "stats",
                                           "plot", "top",   "settings", "names"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(cmd, commands[k]))
            set_command_name(commands[k]);
    if (!strcmp(cmd, "run")) {
        self_dir(dir, sizeof dir, argv[0]);
        return cmd_run(argc, argv, dir);
    }
    if (!strcmp(cmd, "bench")) {
        self_dir(dir, sizeof dir, argv[0]);
        return cmd_bench(argc, argv, dir);
    }
    if (!strcmp(cmd, "sim")) {
        self_dir(dir, sizeof dir, argv[0]);
        return cmd_sim(argc, argv, dir);
    }
    if (!strcmp(cmd, "prof"))
        return cmd_prof(argc, argv, NULL);
    if (!strcmp(cmd, "stats"))
        return cmd_stats(argc, argv);
    if (!strcmp(cmd, "plot"))
        return cmd_plot(argc, argv);
    if (!strcmp(cmd, "top"))
        return cmd_top(argc, argv);
    if (!strcmp(cmd, "settings") || !strcmp(cmd, "names")) {
        self_dir(dir, sizeof dir, argv[0]);
        return cmd_describe(argc, argv, dir);
    }
    usage_error("unknown %s '%s'", cmd[0] == '-' ? "option" : "command", cmd);
}
