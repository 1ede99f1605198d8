package tpch

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// Result is the verdict of CompareAnswer.
type Result struct {
	// Pass is true when every value satisfies the TPC-H kit's tolerance
	// rule for its column.
	Pass bool
	// Exact is true when, in addition, every numeric value equals the
	// official one once both are rounded to 2 decimals.
	Exact bool
	// Detail says why the result failed, or where it first deviated from
	// the exact answer; it is a one-line summary otherwise.
	Detail string
}

// columnKinds holds the kit's comparison rule for each column of each
// query's result (index 0 is unused).
var columnKinds = [23]string{
	1: "str str sum sum sum sum avg avg avg cnt", 2: "num str str int str str str str",
	3: "int sum str int", 4: "str cnt", 5: "str sum", 6: "sum", 7: "str str int sum",
	8: "int rat", 9: "str int sum", 10: "int str sum num str str str str", 11: "int sum",
	12: "str sum sum", 13: "cnt cnt", 14: "rat", 15: "int str str str sum",
	16: "str str num cnt", 17: "avg", 18: "str int int str num sum", 19: "sum",
	20: "str str", 21: "str cnt", 22: "num cnt sum",
}

// CompareAnswer checks a query result against an official TPC-H answer file
// (the kit's format: a header line, then '|'-separated, space-padded rows),
// row by row and in order, with the kit's rule per column:
//
//	str       equal after trimming trailing spaces
//	int, cnt  equal as integers
//	num       equal when both are rounded to 2 decimals
//	sum       2-decimal values differ by at most 100
//	avg       2-decimal values differ by at most 1 %
//	rat       2-decimal values differ by at most 1
//
// Integers are compared exactly. Other numbers are rounded to 2 decimals the
// way the kit's checker does it: the value is read as a float64 and rounded
// correctly from its binary value (42698382.855 is 42698382.85499... as a
// float64, so it rounds to .85). rows hold values as a CSV writer prints them; header
// is only checked for its column count, because the kit's own headers are
// truncated column names. A mismatch is reported in the Result; the error is
// for an unknown query or an unreadable answer.
func CompareAnswer(query int, answer io.Reader, header []string, rows [][]string) (Result, error) {
	if query < 1 || query > 22 {
		return Result{}, fmt.Errorf("tpch: no TPC-H query %d", query)
	}
	kinds := strings.Fields(columnKinds[query])
	want, err := readAnswer(answer)
	if err != nil {
		return Result{}, fmt.Errorf("tpch: read answer for q%d: %w", query, err)
	}
	fail := func(format string, args ...any) (Result, error) {
		return Result{Detail: fmt.Sprintf("q%d FAIL ", query) + fmt.Sprintf(format, args...)}, nil
	}
	if header != nil && len(header) != len(kinds) {
		return fail("header has %d columns, want %d", len(header), len(kinds))
	}
	if len(rows) != len(want) {
		return fail("rows: got %d want %d", len(rows), len(want))
	}
	exact := true
	firstInexact := ""
	for i := range want {
		if len(rows[i]) != len(kinds) {
			return fail("row %d: %d columns, want %d", i, len(rows[i]), len(kinds))
		}
		if len(want[i]) != len(kinds) {
			return Result{}, fmt.Errorf("tpch: answer for q%d: row %d has %d columns, want %d", query, i, len(want[i]), len(kinds))
		}
		for j, kind := range kinds {
			w := strings.TrimRight(want[i][j], " ")
			g := strings.TrimRight(rows[i][j], " ")
			ok, ex := compareCell(kind, w, g)
			if !ok {
				return fail("row %d col %d (%s): got %q want %q", i, j, kind, g, w)
			}
			if !ex && exact {
				exact = false
				firstInexact = fmt.Sprintf("row %d col %d (%s): got %q want %q", i, j, kind, g, w)
			}
		}
	}
	if !exact {
		return Result{Pass: true, Detail: fmt.Sprintf("q%d pass tolerant; first difference at %s", query, firstInexact)}, nil
	}
	return Result{Pass: true, Exact: true, Detail: fmt.Sprintf("q%d pass exact", query)}, nil
}

// compareCell applies one column rule; it reports whether the value passes
// the tolerance rule and whether it is exact.
func compareCell(kind, want, got string) (ok, exact bool) {
	if kind == "str" {
		return want == got, want == got
	}
	w, werr := parseNumber(want)
	g, gerr := parseNumber(got)
	if werr != nil || gerr != nil {
		return false, false
	}
	switch kind {
	case "int", "cnt":
		ok := w.IsInt() && g.IsInt() && w.Cmp(g) == 0
		return ok, ok
	}
	w, g = round2(w), round2(g)
	diff := new(big.Rat).Sub(w, g)
	diff.Abs(diff)
	exact = diff.Sign() == 0
	switch kind {
	case "num":
		return exact, exact
	case "sum":
		return diff.Cmp(big.NewRat(100, 1)) <= 0, exact
	case "rat":
		return diff.Cmp(big.NewRat(1, 1)) <= 0, exact
	case "avg":
		if w.Sign() == 0 {
			return g.Cmp(big.NewRat(1, 1)) <= 0 && g.Cmp(big.NewRat(-1, 1)) >= 0, exact
		}
		// |w-g| / |w| <= 1/100  <=>  100*|w-g| <= |w|
		lhs := new(big.Rat).Mul(diff, big.NewRat(100, 1))
		return lhs.Cmp(new(big.Rat).Abs(w)) <= 0, exact
	}
	return false, false
}

// parseNumber reads a decimal number exactly; it accepts the forms printed
// for integers, decimals and floats (including exponents).
func parseNumber(s string) (*big.Rat, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty number")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("not a number: %q", s)
	}
	return r, nil
}

// round2 rounds to 2 decimals as the kit's checker does: through float64,
// correctly rounded from the binary value.
func round2(r *big.Rat) *big.Rat {
	f, _ := r.Float64()
	out, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'f', 2, 64))
	return out
}

// readAnswer parses an official answer file into rows of cells, skipping
// the header line and blank lines.
func readAnswer(r io.Reader) ([][]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var rows [][]string
	first := true
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if first {
			first = false
			continue
		}
		rows = append(rows, strings.Split(line, "|"))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if first {
		return nil, errors.New("empty answer file")
	}
	return rows, nil
}

// ReadCSVResult reads a query result printed as CSV with a header row, as
// `sluice --format csv` prints it. Rows may have differing column counts;
// CompareAnswer reports that.
func ReadCSVResult(r io.Reader) (header []string, rows [][]string, err error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err = cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("tpch: CSV result is empty: no header row")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tpch: read CSV header: %w", err)
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return header, rows, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tpch: read CSV result: %w", err)
		}
		rows = append(rows, rec)
	}
}
