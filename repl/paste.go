package repl

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Bracketed paste. The shell asks the terminal to mark pasted text with
// ESC[200~ ... ESC[201~; pasteFilter, between the terminal and readline,
// drops the marks and hands readline the pasted tabs and line breaks as
// two private-use characters, so that readline neither completes at a
// pasted tab nor submits at a pasted newline: the whole paste lands on the
// input line and runs when the user presses Enter, and unpaste turns the
// characters back into the tabs and newlines that were pasted.
const (
	pasteTab     = '\uE009'
	pasteNewline = '\uE00A'

	pasteOn    = "\x1b[?2004h"
	pasteOff   = "\x1b[?2004l"
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// pasteFilter reads the terminal for readline, rewriting pasted text.
type pasteFilter struct {
	in      io.ReadCloser
	carry   []byte // the start of a mark split across reads
	out     []byte // rewritten bytes not yet handed out
	inPaste bool
	lastCR  bool // the paste's last byte was '\r' (a "\r\n" is one break)
	buf     [4096]byte
}

func newPasteFilter(in io.ReadCloser) *pasteFilter { return &pasteFilter{in: in} }

// Read hands out rewritten bytes, reading the terminal when it has none.
func (f *pasteFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		n, err := f.in.Read(f.buf[:])
		if n > 0 {
			f.rewrite(append(f.carry, f.buf[:n]...))
		}
		if err != nil {
			if len(f.out) == 0 && len(f.carry) > 0 {
				f.out, f.carry = f.carry, nil
			}
			if len(f.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// Close closes the terminal reader.
func (f *pasteFilter) Close() error { return f.in.Close() }

// rewrite appends data, rewritten, to f.out, keeping in f.carry a trailing
// partial mark to complete with the next read.
func (f *pasteFilter) rewrite(data []byte) {
	f.carry = nil
	for i := 0; i < len(data); i++ {
		if data[i] == 0x1b {
			rest := data[i:]
			switch {
			case bytes.HasPrefix(rest, []byte(pasteStart)):
				f.inPaste, f.lastCR = true, false
				i += len(pasteStart) - 1
				continue
			case bytes.HasPrefix(rest, []byte(pasteEnd)):
				f.inPaste = false
				i += len(pasteEnd) - 1
				continue
			case len(rest) < len(pasteStart) && (bytes.HasPrefix([]byte(pasteStart), rest) || bytes.HasPrefix([]byte(pasteEnd), rest)):
				f.carry = append([]byte(nil), rest...)
				return
			}
		}
		c := data[i]
		if !f.inPaste {
			f.out = append(f.out, c)
			continue
		}
		switch {
		case c == '\t':
			f.out = utf8.AppendRune(f.out, pasteTab)
		case c == '\n' && f.lastCR:
			// The '\n' of a "\r\n": one line break, already written.
		case c == '\r' || c == '\n':
			f.out = utf8.AppendRune(f.out, pasteNewline)
		default:
			f.out = append(f.out, c)
		}
		f.lastCR = c == '\r'
	}
}

// unpaste turns the pasted tabs and line breaks of a line back into
// themselves.
var unpaste = strings.NewReplacer(string(pasteTab), "\t", string(pasteNewline), "\n").Replace

// historyEntry is a statement as the history keeps it: one entry, whose
// line breaks and tabs are the characters a paste brings them as, so that
// the history file keeps one line per entry and a recalled statement runs
// with its lines as typed (unpaste restores them).
func historyEntry(stmt string) string {
	return strings.NewReplacer("\n", string(pasteNewline), "\t", string(pasteTab)).Replace(strings.TrimSpace(stmt))
}
