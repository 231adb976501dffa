package sandbox

import (
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The rules a Denial names.
const (
	RuleRead    = "read"
	RuleWrite   = "write"
	RuleExec    = "exec"
	RuleNetwork = "network"
	RuleLimit   = "limit"
)

// How a Denial was attributed: the kernel's own word, or a reading of
// the program's stderr (a heuristic: the kernel does not tell an
// unprivileged parent which rule refused its child).
const (
	BySignal  = "signal"   // the kernel's signal for the limit (SIGXCPU)
	ByCPUTime = "cpu_time" // SIGKILL after the CPU time reached the hard limit
	ByExit    = "exit"     // the helper itself could not exec the program
	ByStderr  = "stderr"   // an error message on stderr, checked against the grants
)

// Denial is what stopped a confined program, as far as can be told.
type Denial struct {
	// Rule is read, write, exec, network or limit.
	Rule string
	// Limit names the limit hit (cpu_seconds, memory_mb, files,
	// processes) and Value its setting, for RuleLimit.
	Limit string
	Value int
	// Path is the refused path (read, write, exec), when one was named.
	Path string
	// Address is the refused address (network), when the program named one.
	Address string
	// Attribution says how the denial was told (BySignal, ByCPUTime,
	// ByExit, ByStderr).
	Attribution string
	// Evidence is the stderr line the attribution rests on.
	Evidence string
}

// stderrPatterns are the patterns of stderr lines by what they report
// (errno names, strerror texts and the wording of common runtimes). They
// are compiled on the first Classify, not when the package loads: the
// helper, which links this package, starts for every call and never
// classifies.
type stderrPatterns struct {
	reDenied   *regexp.Regexp
	reHidden   *regexp.Regexp
	rePath     *regexp.Regexp
	reNoNet    *regexp.Regexp
	reAbstract *regexp.Regexp
	reRefused  *regexp.Regexp
	reUnixVerb *regexp.Regexp
	reNetVerb  *regexp.Regexp
	reAddr     *regexp.Regexp
	reWrite    *regexp.Regexp
	reExec     *regexp.Regexp
	reMemory   *regexp.Regexp
	reProcs    *regexp.Regexp
	reFiles    *regexp.Regexp
}

// patterns compiles the stderr patterns once.
var patterns = sync.OnceValue(func() *stderrPatterns {
	return &stderrPatterns{
		reDenied: regexp.MustCompile(`(?i)permission denied|operation not permitted|\bEACCES\b|\bEPERM\b|errno 13\b|errno 1\b`),
		// reHidden is a path the program did not find: outside its grants,
		// the sandbox's view does not show it.
		reHidden:   regexp.MustCompile(`(?i)no such file or directory|directory nonexistent|\bENOENT\b|errno 2\b`),
		rePath:     regexp.MustCompile("(/[^\\s:'\"`,()\\[\\]{}]+)"),
		reNoNet:    regexp.MustCompile(`(?i)network is unreachable|\bENETUNREACH\b|errno 101\b|no route to host|name resolution|could not resolve|couldn't connect|failed to connect`),
		reAbstract: regexp.MustCompile(`(?:^|[\s'"(])(@[\w.\-/]+)`),
		reRefused:  regexp.MustCompile(`(?i)connection refused|\bECONNREFUSED\b|errno 111\b`),
		reUnixVerb: regexp.MustCompile(`(?i)\bconnect|AF_UNIX|unix socket`),
		reNetVerb:  regexp.MustCompile(`(?i)\bconnect|\bsocket|\btcp\b|\bbind\b`),
		reAddr:     regexp.MustCompile(`(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]|localhost)(?::| port |/)(\d{1,5})`),
		reWrite:    regexp.MustCompile(`(?i)creat|writ|touch|mkdir|remove|unlink|rename|read-only|\brm\b|\bmv\b|\bcp\b|truncat|O_WRONLY|O_RDWR|W_OK|\btee\b`),
		reExec:     regexp.MustCompile(`(?i)exec|cannot run|spawn`),
		reMemory:   regexp.MustCompile(`(?i)out of memory|MemoryError|cannot allocate memory|bad_alloc|\bENOMEM\b|memory exhausted|allocation failed|errno 12\b`),
		reProcs:    regexp.MustCompile(`(?i)cannot fork|can't fork|fork: |fork failed|fork\(\)|BlockingIOError|resource temporarily unavailable|\bEAGAIN\b|errno 11\b|pthread_create|failed to create new OS thread`),
		reFiles:    regexp.MustCompile(`(?i)too many open files|\bEMFILE\b|errno 24\b`),
	}
})

// Classify says which rule or limit of p stopped a confined program that
// ended with st (its wait status) and the stderr tail, or nil when
// nothing points at the sandbox (the program failed on its own). A CPU
// limit is the kernel's word (SIGXCPU, or SIGKILL after the hard limit's
// CPU time); everything else is read from stderr and checked against the
// grants — a program that hides its errors cannot be attributed.
func Classify(p *Policy, st *Exit, stderr string) *Denial {
	if d := cpuDenial(p, st); d != nil {
		return d
	}
	if st != nil && st.ExitCode() == ExitExecDenied && strings.Contains(stderr, stderrPrefix+"exec ") {
		return &Denial{Rule: RuleExec, Path: firstPath(lastLine(stderr, stderrPrefix+"exec ")), Attribution: ByExit, Evidence: lastLine(stderr, stderrPrefix+"exec ")}
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, check := range []func(*Policy, []string) *Denial{limitDenial, socketDenial, networkDenial, fileDenial} {
		if d := check(p, lines); d != nil {
			return d
		}
	}
	return nil
}

func cpuDenial(p *Policy, st *Exit) *Denial {
	if st == nil || p.Limits.CPUSeconds == 0 {
		return nil
	}
	ws := st.Status
	if !ws.Signaled() {
		return nil
	}
	d := &Denial{Rule: RuleLimit, Limit: "cpu_seconds", Value: p.Limits.CPUSeconds}
	switch {
	case ws.Signal() == syscall.SIGXCPU:
		d.Attribution = BySignal
		return d
	case ws.Signal() == syscall.SIGKILL && st.CPU >= time.Duration(p.Limits.CPUSeconds)*time.Second:
		d.Attribution = ByCPUTime
		return d
	}
	return nil
}

// limitDenial finds a memory, process or file limit's refusal.
func limitDenial(p *Policy, lines []string) *Denial {
	for _, l := range []struct {
		name  string
		value int
		re    *regexp.Regexp
	}{{"memory_mb", p.Limits.MemoryMB, patterns().reMemory}, {"processes", p.Limits.Processes, patterns().reProcs}, {"files", p.Limits.Files, patterns().reFiles}} {
		if l.value == 0 {
			continue
		}
		if line := lastMatch(lines, l.re); line != "" {
			return &Denial{Rule: RuleLimit, Limit: l.name, Value: l.value, Attribution: ByStderr, Evidence: line}
		}
	}
	return nil
}

// networkDenial finds a refused connection when the network is restricted.
func networkDenial(p *Policy, lines []string) *Denial {
	if p.Network.Any {
		return nil
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		// A runtime's traceback puts the call (sock.connect) above the error.
		context := strings.Join(lines[max(0, i-3):i+1], "\n")
		if patterns().reNoNet.MatchString(l) || (patterns().reDenied.MatchString(l) && patterns().reNetVerb.MatchString(context) && !hasUngrantedPath(p, l)) {
			d := &Denial{Rule: RuleNetwork, Attribution: ByStderr, Evidence: l}
			for _, near := range []string{l, strings.Join(lines, "\n")} {
				if m := patterns().reAddr.FindStringSubmatch(near); m != nil {
					d.Address = m[1] + ":" + m[2]
					break
				}
			}
			return d
		}
	}
	return nil
}

// socketDenial finds a refused connect to a pathname unix socket outside
// the grants, which the sandbox's view does not show: a "no such file"
// (or "permission denied") line naming a socket that exists on the host,
// or, with no path named, a "no such file" right after a connect.
func socketDenial(p *Policy, lines []string) *Denial {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if m := patterns().reAbstract.FindStringSubmatch(l); m != nil && (patterns().reRefused.MatchString(l) || patterns().reDenied.MatchString(l)) && !p.Network.Any {
			// Network none: abstract sockets are the host's network
			// namespace's, which the program is not in.
			return &Denial{Rule: RuleNetwork, Address: "unix:" + m[1], Attribution: ByStderr, Evidence: l}
		}
		if !patterns().reHidden.MatchString(l) && !patterns().reDenied.MatchString(l) {
			continue
		}
		for _, m := range patterns().rePath.FindAllString(l, -1) {
			path := strings.TrimRight(m, ".")
			if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeSocket != 0 && !covered(path, p.Write) && !covered(path, p.Read) {
				return &Denial{Rule: RuleNetwork, Address: "unix:" + path, Attribution: ByStderr, Evidence: l}
			}
		}
		context := strings.Join(lines[max(0, i-3):i+1], "\n")
		if patterns().reHidden.MatchString(l) && patterns().reUnixVerb.MatchString(context) && patterns().rePath.FindString(l) == "" {
			return &Denial{Rule: RuleNetwork, Attribution: ByStderr, Evidence: l}
		}
	}
	return nil
}

// existsOnHost reports whether path, or its directory, exists as the
// worker sees it.
func existsOnHost(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// fileDenial finds a refused path: a "permission denied" line (Landlock)
// or a "no such file" line (the view shows only the grants) naming a path
// outside the grants that the worker itself can reach — for "no such
// file", one that exists on the host, or whose directory does (a create).
func fileDenial(p *Policy, lines []string) *Denial {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		hidden := patterns().reHidden.MatchString(l)
		if !patterns().reDenied.MatchString(l) && !hidden {
			continue
		}
		locs := patterns().rePath.FindAllStringIndex(l, -1)
		for _, loc := range locs {
			if len(locs) > 1 && programPrefix(l, loc) {
				continue
			}
			path := strings.TrimRight(l[loc[0]:loc[1]], ".")
			if covered(path, p.Write) || covered(path, devicesRW()) {
				continue
			}
			if hidden && (covered(path, p.Read) || !existsOnHost(path) && !patterns().reWrite.MatchString(l)) {
				continue // the program's own missing file
			}
			if rule := fileRule(p, path, l); rule != "" && dacAllows(path, rule == RuleWrite) {
				return &Denial{Rule: rule, Path: path, Attribution: ByStderr, Evidence: l}
			}
		}
	}
	return nil
}

// fileRule decides whether a denial of path was a read, a write or an
// exec: a path the grants let the program read can only have been
// refused for writing; one that does not exist only for creating.
func fileRule(p *Policy, path, line string) string {
	_, statErr := os.Stat(path)
	readable := covered(path, p.Read)
	switch {
	case readable || patterns().reWrite.MatchString(line):
		return RuleWrite
	case os.IsNotExist(statErr):
		if _, err := os.Stat(dirOf(path)); err != nil {
			return "" // nothing there to refuse: the program's own error
		}
		return RuleWrite
	case patterns().reExec.MatchString(line):
		return RuleExec
	}
	return RuleRead
}

// dacAllows reports whether the file permissions alone let a confined
// program (the worker's uid, or nobody for a root worker) read or write
// path: if they do not, a "permission denied" is theirs, not the sandbox's.
func dacAllows(path string, write bool) bool {
	target := path
	if _, err := os.Stat(path); os.IsNotExist(err) {
		target = dirOf(path) // creating: the directory must be writable
	}
	if os.Getuid() != 0 {
		mode := uint32(4)
		if write {
			mode = 2
		}
		return syscall.Access(target, mode) == nil
	}
	st, err := os.Stat(target)
	if err != nil {
		return false
	}
	bit := os.FileMode(0o004)
	if write {
		bit = 0o002
	}
	return st.Mode().Perm()&bit != 0
}

// programPrefix reports whether the match at loc is the program's name
// that starts an error line ("/usr/bin/cat: /etc/hostname: …").
func programPrefix(line string, loc []int) bool {
	return strings.TrimSpace(line[:loc[0]]) == "" && strings.HasPrefix(line[loc[1]:], ":")
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "/"
}

func hasUngrantedPath(p *Policy, line string) bool {
	for _, m := range patterns().rePath.FindAllString(line, -1) {
		if !covered(m, p.Read) && !covered(m, p.Write) {
			if _, err := os.Stat(m); err == nil {
				return true
			}
		}
	}
	return false
}

func lastMatch(lines []string, re *regexp.Regexp) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return lines[i]
		}
	}
	return ""
}

func lastLine(s, containing string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], containing) {
			return lines[i]
		}
	}
	return ""
}

func firstPath(s string) string { return patterns().rePath.FindString(s) }

// SetupFailure returns the helper's own complaint when it could not set
// the sandbox up (the program never ran).
func SetupFailure(st *Exit, stderr string) (string, bool) {
	if st == nil || st.ExitCode() != ExitSetup || !strings.Contains(stderr, stderrPrefix) {
		return "", false
	}
	return strings.TrimPrefix(lastLine(stderr, stderrPrefix), stderrPrefix), true
}
