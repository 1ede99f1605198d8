package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestrictLocations(t *testing.T) {
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("a,b\n1,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(allowed, "t.csv"))
	write(filepath.Join(outside, "secret.csv"))
	// A link inside the allowed directory to a file outside it.
	if err := os.Symlink(filepath.Join(outside, "secret.csv"), filepath.Join(allowed, "link.csv")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RestrictLocations(nil) })

	none, err := NewLocations(nil)
	if err != nil {
		t.Fatal(err)
	}
	RestrictLocations(none)
	_, err = OpenCSV(filepath.Join(allowed, "t.csv"), CSVOptions{Header: true}, nil)
	if !errors.Is(err, ErrLocationNotAllowed) || !strings.Contains(err.Error(), "--allowed-locations") {
		t.Fatalf("no allowed locations: got %v, want an error naming --allowed-locations", err)
	}

	l, err := NewLocations([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	RestrictLocations(l)
	if _, err := OpenCSV(filepath.Join(allowed, "t.csv"), CSVOptions{Header: true}, nil); err != nil {
		t.Fatalf("a file in the allowed directory: %v", err)
	}
	for _, p := range []string{
		filepath.Join(outside, "secret.csv"),
		filepath.Join(allowed, "..", "outside", "secret.csv"),
		filepath.Join(allowed, "link.csv"),
		filepath.Join(outside, "missing.csv"),
		"/etc/passwd",
		"/proc/self/cmdline",
	} {
		if _, err := OpenCSV(p, CSVOptions{}, nil); !errors.Is(err, ErrLocationNotAllowed) {
			t.Errorf("%s: got %v, want ErrLocationNotAllowed", p, err)
		}
		if _, err := OpenRegular(p); !errors.Is(err, ErrLocationNotAllowed) {
			t.Errorf("OpenRegular %s: got %v, want ErrLocationNotAllowed", p, err)
		}
	}
	// The allowed directory read whole skips nothing silently: the link out
	// of it fails the open.
	if _, err := OpenCSV(allowed, CSVOptions{Header: true}, nil); !errors.Is(err, ErrLocationNotAllowed) {
		t.Errorf("directory with a link out: got %v, want ErrLocationNotAllowed", err)
	}

	// Even "/" allowed does not open pseudo-files.
	all, err := NewLocations([]string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	RestrictLocations(all)
	if _, err := OpenRegular("/proc/self/cmdline"); !errors.Is(err, ErrLocationNotAllowed) {
		t.Errorf("/proc with / allowed: got %v", err)
	}
	if _, err := OpenRegular(filepath.Join(outside, "secret.csv")); err != nil {
		t.Errorf("with / allowed: %v", err)
	}
}
