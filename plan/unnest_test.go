package plan

import "testing"

// Pruning an Unnest keeps its arrays but does not pass on input columns
// nothing above reads.
func TestPruneUnnest(t *testing.T) {
	k := Column{ID: 1, Name: "k", Type: Int64}
	a := Column{ID: 2, Name: "a", Type: ArrayOf(Int64)}
	e := Column{ID: 3, Name: "unnest", Type: Int64, Nullable: true}
	in := &Values{Cols: Schema{k, a}, Rows: [][]Expr{{&Literal{Typ: Int64, Val: int64(1)}, &Literal{Typ: a.Type}}}}
	u := &Unnest{Input: in, Args: []Expr{a.Ref()}, Cols: Schema{e}}
	top := &Project{Input: u, Exprs: []Expr{e.Ref()}, Cols: Schema{e}}
	out, err := PruneColumns(top, nil)
	if err != nil {
		t.Fatal(err)
	}
	pu := out.(*Project).Input.(*Unnest)
	if got := pu.Schema(); len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("unnest outputs %v, want only the element column", got)
	}
	if !pu.Drop.Has(k.ID) || pu.Drop.Has(a.ID) && len(pu.Args) != 1 {
		t.Fatalf("drop %v", pu.Drop)
	}
}
