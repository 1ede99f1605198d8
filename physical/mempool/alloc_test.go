package mempool

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPoolAllocatorZeroesRecycledBuffers: a freed buffer comes back zeroed,
// growth inside a buffer's size class zeroes the new bytes, growth beyond
// it copies, and sizes outside the pooled range pass through.
func TestPoolAllocatorZeroesRecycledBuffers(t *testing.T) {
	a := &poolAllocator{}
	dirty := func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	zero := func(name string, b []byte) {
		t.Helper()
		for i, x := range b {
			if x != 0 {
				t.Fatalf("%s: byte %d is %#x, want 0", name, i, x)
			}
		}
	}

	b := a.Allocate(5000)
	if len(b) != 5000 || cap(b) != 8192 {
		t.Fatalf("Allocate(5000): len %d cap %d, want 5000 and 8192", len(b), cap(b))
	}
	dirty(b[:cap(b)])
	a.Free(b)
	// Whatever the pool hands back (this buffer or a fresh one) is zero.
	for range 3 {
		c := a.Allocate(6000)
		zero("reused", c)
		dirty(c[:cap(c)])
		a.Free(c)
	}

	c := a.Allocate(4096)
	dirty(c)
	g := a.Reallocate(4096+100, c)
	if cap(g) < 4196 {
		t.Fatalf("Reallocate grew to cap %d", cap(g))
	}
	for i := range 4096 {
		if g[i] != 0xff {
			t.Fatalf("Reallocate lost byte %d", i)
		}
	}
	zero("grown part", g[4096:])

	d := a.Allocate(8192)
	dirty(d)
	e := a.Reallocate(8000, d) // shrink within the class: contents kept
	if len(e) != 8000 || e[7999] != 0xff {
		t.Fatalf("shrink: len %d", len(e))
	}
	f := a.Reallocate(8192, e) // and grow back: the re-exposed tail is zeroed
	zero("re-exposed tail", f[8000:])

	small := a.Allocate(100)
	if len(small) != 100 {
		t.Fatalf("small: len %d", len(small))
	}
	a.Free(small) // not pooled; must not panic
	a.Free(nil)
	a.Free(make([]byte, 3000, 4096)) // a pooled size: accepted
}

func TestPoolClass(t *testing.T) {
	for _, c := range []struct{ size, class int }{
		{4095, -1}, {4096, 12}, {4097, 13}, {8192, 13}, {1 << 28, 28}, {1<<28 + 1, -1},
	} {
		if got := poolClass(c.size); got != c.class {
			t.Errorf("poolClass(%d) = %d, want %d", c.size, got, c.class)
		}
	}
}

// TestAllocSlice: typed slices from the pool are zeroed, even when they
// reuse a freed (dirty) buffer, and small ones come from the Go heap.
func TestAllocSlice(t *testing.T) {
	type groupSlot struct {
		hash uint64
		gid  int32
	}
	for range 3 {
		s := AllocSlice[groupSlot](1024) // 16 KiB: pooled
		for i, x := range s {
			if x != (groupSlot{}) {
				t.Fatalf("slot %d not zero: %+v", i, x)
			}
		}
		for i := range s {
			s[i] = groupSlot{hash: ^uint64(0), gid: -1}
		}
		FreeSlice(s)
	}
	small := AllocSlice[int32](10)
	if len(small) != 10 {
		t.Fatalf("len %d", len(small))
	}
	FreeSlice(small) // not pooled: ignored
	if AllocSlice[int64](0) != nil {
		t.Fatal("zero-length slice allocated")
	}
}

// TestGrowSlice: the elements are kept through growth from nil past the
// pooled sizes, the capacity covers the request, and a buffer given back
// serves the next growth without its old contents showing through len.
func TestGrowSlice(t *testing.T) {
	var s []int64
	for i := range 5000 {
		if len(s) == cap(s) {
			s = GrowSlice(s, 2*cap(s)+1)
			if cap(s) < 2*i+1 || len(s) != i {
				t.Fatalf("after %d appends: len %d cap %d", i, len(s), cap(s))
			}
		}
		s = append(s, int64(i))
	}
	for i, v := range s {
		if v != int64(i) {
			t.Fatalf("element %d is %d", i, v)
		}
	}
	FreeSlice(s[:cap(s)])
	b := GrowSlice([]byte(nil), 1<<13)
	if len(b) != 0 || cap(b) < 1<<13 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	b = append(b, 1, 2, 3)
	b = GrowSlice(b, 1<<15)
	if len(b) != 3 || b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Fatalf("grown: %v", b)
	}
	FreeSlice(b[:cap(b)])
	if s := GrowSlice([]int32{1, 2}, 1); len(s) != 2 || cap(s) != 2 {
		t.Fatal("growth to a capacity the slice has already must keep it")
	}
}

// TestUnzeroed: buffers come from the pool and go back to it, growth keeps
// what was written, and an allocator other than the pool is left alone.
func TestUnzeroed(t *testing.T) {
	u := Unzeroed(Allocator)
	b := u.Allocate(5000)
	if len(b) != 5000 || cap(b) != 8192 {
		t.Fatalf("Allocate(5000): len %d cap %d, want 5000 and 8192", len(b), cap(b))
	}
	for i := range b {
		b[i] = byte(i)
	}
	g := u.Reallocate(8192, b)
	if len(g) != 8192 || &g[0] != &b[0] {
		t.Fatalf("growth within the class moved or cut the buffer")
	}
	h := u.Reallocate(20000, g)
	if len(h) != 20000 || cap(h) != 32768 {
		t.Fatalf("Reallocate(20000): len %d cap %d", len(h), cap(h))
	}
	for i := range 5000 {
		if h[i] != byte(i) {
			t.Fatalf("growth lost byte %d", i)
		}
	}
	u.Free(h)
	if Unzeroed(memory.DefaultAllocator) != memory.DefaultAllocator {
		t.Fatal("Unzeroed of the Go allocator is not the Go allocator")
	}
}
