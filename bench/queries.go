package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// QueryFiles reads the scripts qN.sql of dir for the numbers only lists
// ("1,3,q6"), or every qN.sql there when only is empty, ascending, as
// queries of set.
func QueryFiles(dir, only, set string) ([]Query, error) {
	var ns []int
	if only == "" {
		files, err := filepath.Glob(filepath.Join(dir, "q*.sql"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "q"), ".sql")); err == nil && n > 0 {
				ns = append(ns, n)
			}
		}
		slices.Sort(ns)
	} else {
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f), "q"))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--only: %q is not a query number", f)
			}
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("no qN.sql in %s", dir)
	}
	qs := make([]Query, 0, len(ns))
	for _, n := range ns {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("q%d.sql", n)))
		if err != nil {
			return nil, err
		}
		qs = append(qs, Query{Set: set, N: n, Text: string(b)})
	}
	return qs, nil
}
