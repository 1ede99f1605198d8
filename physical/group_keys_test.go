package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestGroupTableHashCollision forces a slot whose hash equals another key's
// hash and checks that the key comparison keeps the groups apart.
func TestGroupTableHashCollision(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	mk := func(vals ...string) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	for _, types := range [][]arrow.DataType{{plan.Utf8}, {plan.Utf8, plan.Utf8}} {
		tab, err := newGroupTable(types)
		if err != nil {
			t.Fatal(err)
		}
		a, b := mk("a"), mk("b")
		cols := func(x arrow.Array) []arrow.Array {
			if len(types) == 1 {
				return []arrow.Array{x}
			}
			return []arrow.Array{x, x}
		}
		gids := make([]int32, 2)
		newRows := make([]bool, 2)
		if err := tab.lookup(cols(a), 1, gids, newRows); err != nil || gids[0] != 0 || !newRows[0] {
			t.Fatalf("first insert: gid %d new %v err %v", gids[0], newRows[0], err)
		}
		// Give group "a"'s slot the hash of "b" (a simulated collision).
		hb := make([]uint64, 1)
		if err := HashRows(cols(b), hb); err != nil {
			t.Fatal(err)
		}
		for i := range tab.slots {
			if tab.slots[i].gid == 1 {
				tab.slots[i].hash = hb[0]
			}
		}
		ab := mk("b", "b")
		if err := tab.lookup(cols(ab), 2, gids, newRows); err != nil {
			t.Fatal(err)
		}
		if gids[0] != 1 || gids[1] != 1 || !newRows[0] || newRows[1] {
			t.Fatalf("colliding key: gids %v new %v", gids, newRows)
		}
		keys := tab.buildKeys(0, 2, mem)
		if got := keys[0].(*array.String); got.Value(0) != "a" || got.Value(1) != "b" {
			t.Fatalf("keys %v", got)
		}
		joinReleaseArrays(keys)
		a.Release()
		b.Release()
		ab.Release()
	}
}
