package repl

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/session"
)

// endless yields the same byte forever, like /dev/zero.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestRunReaderEndlessInput checks that a script that never ends a line
// (an endless file of NULs, or of text) stops with an error once it
// passes the statement limit instead of reading until memory runs out.
func TestRunReaderEndlessInput(t *testing.T) {
	for _, c := range []struct {
		in   io.Reader
		want string
	}{
		{endless(0), "NUL byte at line 1 column 1"},
		{io.MultiReader(strings.NewReader("SELECT '"), endless('x')), "statement starting at line 1 is too large"},
	} {
		var out, errs bytes.Buffer
		r := &Runner{Session: session.New(catalog.New()), Out: &out, Err: &errs, Format: "csv"}
		err := r.RunReader(context.Background(), "endless", c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
		if !strings.Contains(errs.String(), c.want) {
			t.Errorf("stderr %q does not report %q", errs.String(), c.want)
		}
	}
}

// TestRunScriptNULDoesNotCut checks that a NUL byte in a statement stops
// the script before that statement runs: it must never run cut short.
func TestRunScriptNULDoesNotCut(t *testing.T) {
	var out, errs bytes.Buffer
	r := &Runner{Session: session.New(catalog.New()), Out: &out, Err: &errs, Format: "csv", ContinueOnError: true}
	err := r.RunScript(context.Background(), "-c",
		"SELECT 1 AS first;\nSELECT count(*) AS n FROM (VALUES (1), (2)) t(a)\x00 WHERE a = 1;\nSELECT 3 AS last;\n")
	if err == nil || !strings.Contains(errs.String(), "NUL byte at line 2 column 49") {
		t.Errorf("got %v, stderr %q", err, errs.String())
	}
	if got := out.String(); got != "first\n1\n" {
		t.Errorf("output %q, want only the statement before the NUL", got)
	}
}

// TestPsqlCommandNames: the names help and errors list are exactly the
// backslash commands the shell takes.
func TestPsqlCommandNames(t *testing.T) {
	if len(psqlCommandNames) != len(psqlCommands) {
		t.Fatalf("%d names listed, %d commands", len(psqlCommandNames), len(psqlCommands))
	}
	for _, n := range psqlCommandNames {
		if _, ok := psqlCommands[n]; !ok {
			t.Errorf("%s is listed but not a command", n)
		}
	}
}
