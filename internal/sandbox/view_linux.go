//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// The view is the filesystem a confined program sees: an empty tmpfs root
// with only its grants (each at its own path, with the symbolic links on
// the way to it) and a /proc of its own PID namespace bind-mounted in.
// Whatever is not granted does not exist there, so nothing outside the
// grants can be reached by a call that Landlock does not mediate: connect
// to a pathname unix socket (docker.sock, a database's socket), which
// Landlock up to ABI 7 does not restrict. A mount namespace is what
// bubblewrap builds the same way; it needs no root, only the user
// namespace the helper already runs in, on every kernel that has
// Landlock. (seccomp cannot see a socket's path; Landlock's own scope for
// pathname sockets is newer than the kernels operators run.) Landlock
// still decides the rights on what is visible.

// Where the view is assembled: a tmpfs mounted over /tmp becomes the root
// for a moment, with the host's root under oldRoot and the view being
// built under newRoot.
const (
	viewBase = "/tmp"
	oldRoot  = "/old"
	newRoot  = "/new"
)

// maxLinkDepth bounds the symbolic links followed while mirroring one
// grant.
const maxLinkDepth = 16

// buildView makes this process's mount namespace (its own) the view of
// grants: afterwards / is the view, with /proc mounted, and the working
// directory is the old one when the view has it, else /.
func buildView(grants []string) error {
	cwd, _ := os.Getwd()
	if err := pivotIntoBase(); err != nil {
		return err
	}
	m := &mirror{made: map[string]bool{}}
	sort.Slice(grants, func(i, j int) bool { return len(grants[i]) < len(grants[j]) })
	for _, g := range grants {
		if covered(g, []string{"/proc"}) {
			continue // the view's own /proc serves it
		}
		if err := m.grant(g, 0); err != nil {
			return err
		}
	}
	if err := mkdirAll(newRoot + "/proc"); err != nil {
		return err
	}
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc of the sandbox's PID namespace: %v", err)
	}
	if err := pivotInto(newRoot); err != nil {
		return err
	}
	if cwd == "" || unix.Chdir(cwd) != nil {
		return unix.Chdir("/")
	}
	return nil
}

// pivotIntoBase makes every mount private (nothing done here reaches the
// host), mounts the tmpfs and makes it the root, the host's under oldRoot.
func pivotIntoBase() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %v", err)
	}
	if err := unix.Mount("tmpfs", viewBase, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount the view's tmpfs: %v", err)
	}
	if err := unix.Chdir(viewBase); err != nil {
		return err
	}
	for _, d := range []string{"." + oldRoot, "." + newRoot} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %v", d, err)
		}
	}
	if err := unix.Mount("tmpfs", "."+newRoot, "tmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return fmt.Errorf("mount the view's root: %v", err)
	}
	if err := unix.PivotRoot(".", "."+oldRoot); err != nil {
		return fmt.Errorf("pivot_root: %v", err)
	}
	return unix.Chdir("/")
}

// pivotInto makes dir the root and drops everything else (the host's
// root with it).
func pivotInto(dir string) error {
	if err := unix.Chdir(dir); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the view: %v", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %v", err)
	}
	return unix.Chdir("/")
}

// mirror puts grants into the view under newRoot, from the host's root
// under oldRoot.
type mirror struct {
	bound []string        // host paths bind-mounted so far
	made  map[string]bool // view paths made (directories, links)
}

// grant makes path (absolute, clean) reachable in the view as on the
// host: each directory on the way, each symbolic link on the way as the
// same link (and what it leads to), and the file or directory itself
// bind-mounted. A path that does not exist grants nothing.
func (m *mirror) grant(path string, depth int) error {
	if depth > maxLinkDepth {
		return nil
	}
	if filepath.Clean(path) == "/" {
		if err := unix.Mount(oldRoot, newRoot, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("view: bind /: %v", err)
		}
		m.bound = append(m.bound, "/")
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := ""
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := cur + "/" + part
		if covered(next, m.bound) {
			return nil // an earlier grant shows all of it
		}
		fi, err := os.Lstat(oldRoot + next)
		if err != nil {
			return nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(oldRoot + next)
			if err != nil {
				return nil
			}
			if err := m.link(next, target); err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return m.grant(filepath.Join(append([]string{target}, parts[i+1:]...)...), depth+1)
		}
		if i == len(parts)-1 {
			return m.bind(next, fi.IsDir())
		}
		if err := m.dir(next); err != nil {
			return err
		}
		cur = next
	}
	return nil
}

// dir makes the directory p in the view.
func (m *mirror) dir(p string) error {
	if m.made[p] {
		return nil
	}
	if err := unix.Mkdir(newRoot+p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("view: mkdir %s: %v", p, err)
	}
	m.made[p] = true
	return nil
}

// link makes p in the view a symbolic link to target.
func (m *mirror) link(p, target string) error {
	if m.made[p] {
		return nil
	}
	if err := unix.Symlink(target, newRoot+p); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("view: symlink %s: %v", p, err)
	}
	m.made[p] = true
	return nil
}

// bind bind-mounts the host's p (with what is mounted beneath it) at p in
// the view, onto a directory or an empty file made for it.
func (m *mirror) bind(p string, isDir bool) error {
	if isDir {
		if err := m.dir(p); err != nil {
			return err
		}
	} else if !m.made[p] {
		fd, err := unix.Open(newRoot+p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return fmt.Errorf("view: mount point %s: %v", p, err)
		}
		unix.Close(fd)
		m.made[p] = true
	}
	if err := unix.Mount(oldRoot+p, newRoot+p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("view: bind %s: %v", p, err)
	}
	m.bound = append(m.bound, p)
	return nil
}

// mkdirAll makes the directory p and its parents.
func mkdirAll(p string) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return fmt.Errorf("view: %v", err)
	}
	return nil
}

// probeView checks, in the namespaces the worker starts helpers in, that
// a view can be built (mounts private, a tmpfs, a /proc of the PID
// namespace): a container that masks /proc refuses the last.
func probeView() error {
	return buildView(nil)
}
