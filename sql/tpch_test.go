package sql

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sluice/catalog"
)

const tpchQueryN = 22

// tpchText loads TPC-H query n from the project's PostgreSQL-syntax copies.
func tpchText(t *testing.T, n int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "tpch", fmt.Sprintf("q%d.sql", n)))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// bindScript binds every statement of text, applying CREATE VIEW and DROP
// VIEW to the catalog as a session would, and returns the bound queries.
func bindScript(t *testing.T, cat *catalog.Catalog, text string) ([]*Query, error) {
	t.Helper()
	stmts, err := Parse(text)
	if err != nil {
		return nil, err
	}
	b := &Binder{Catalog: cat}
	var out []*Query
	for _, s := range stmts {
		bound, err := b.Bind(s)
		if err != nil {
			return nil, err
		}
		switch x := bound.(type) {
		case *Query:
			out = append(out, x)
		case *CreateView:
			if err := cat.RegisterView(&catalog.View{Name: x.Name, SQL: x.SQL, Columns: x.Columns}, x.OrReplace); err != nil {
				return nil, err
			}
		case *Drop:
			if x.View {
				cat.DropView(x.Name)
			}
		default:
			return nil, fmt.Errorf("unexpected statement %T", bound)
		}
	}
	return out, nil
}

func TestTPCHQueriesBind(t *testing.T) {
	for n := 1; n <= tpchQueryN; n++ {
		t.Run(fmt.Sprintf("q%d", n), func(t *testing.T) {
			text := tpchText(t, n)
			qs, err := bindScript(t, testCatalog(t), text)
			if err != nil {
				t.Fatalf("q%d: %v\n%s", n, err, text)
			}
			if len(qs) != 1 {
				t.Fatalf("q%d: got %d queries, want 1", n, len(qs))
			}
			checkGolden(t, fmt.Sprintf("tpch_q%d", n), formatQuery(qs[0]))
		})
	}
}
