package mempool

import (
	"math/bits"
	"os"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Allocator is the allocator queries run with: it recycles the buffers of
// released arrays instead of leaving them to the garbage collector.
//
// Why: a query allocates its column buffers at a high rate (the Parquet
// reader alone, a few hundred MiB per TPC-H query), and each fresh large
// allocation from the Go heap is zeroed page by page on first touch, page
// faults included. Recycled buffers are zeroed while still in cache.
// Measured on the 22 TPC-H queries: see docs/architecture.md.
//
// Buffers of 4 KiB to 256 MiB come from per-size-class pools (powers
// of two); smaller ones come straight from the Go heap, whose small-object
// allocator is cheap already. Every buffer Allocate hands out is zeroed,
// as the Go allocator's are (arrow's code relies on it); NewOutputBuffer
// skips that for outputs our own kernels overwrite entirely. A buffer is
// recycled only when its last reference is
// released (arrow's reference counting calls Free); buffers never released
// are simply collected. sync.Pool drops what is not reused within two
// garbage collections, so the pools do not hold memory for idle sessions.
var Allocator memory.Allocator = &poolAllocator{}

const (
	poolMinShift = 12 // 4 KiB
	poolMaxShift = 28 // 256 MiB
)

type poolAllocator struct {
	classes [poolMaxShift + 1]sync.Pool
}

// poolClass returns the size class (log2 of the rounded-up size) of size, or
// -1 when size is outside the pooled range.
func poolClass(size int) int {
	if size < 1<<poolMinShift || size > 1<<poolMaxShift {
		return -1
	}
	return bits.Len(uint(size - 1))
}

// Allocate implements memory.Allocator.
func (a *poolAllocator) Allocate(size int) []byte {
	buf, recycled := a.take(size)
	if recycled {
		clear(buf)
	}
	return buf
}

// take returns a buffer of size bytes: a recycled one (true), whose bytes
// are whatever its last user left, or a fresh, zeroed, one.
func (a *poolAllocator) take(size int) ([]byte, bool) {
	c := poolClass(size)
	if c < 0 {
		return make([]byte, size), false
	}
	if p, ok := a.classes[c].Get().(unsafe.Pointer); ok {
		return unsafe.Slice((*byte)(p), 1<<c)[:size], true
	}
	return make([]byte, size, 1<<c), false
}

// NewOutputBuffer returns a buffer of size bytes for an output its caller
// writes every byte of (gathered or converted values): from Allocator, a
// recycled buffer is handed over without clearing it first. Other
// allocators give their usual, zeroed, buffer.
func NewOutputBuffer(mem memory.Allocator, size int) *memory.Buffer {
	if a, ok := mem.(*poolAllocator); ok {
		buf, _ := a.take(size)
		return memory.NewBufferWithAllocator(buf, a)
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(size)
	return buf
}

// Reallocate implements memory.Allocator. Growth within the buffer's class
// zeroes the newly exposed bytes, which a previous user may have written.
func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free implements memory.Allocator.
func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return // not one of ours (or not a pooled size)
	}
	cl := poolClass(c)
	if cl < 0 || 1<<cl != c {
		return
	}
	b = b[:c]
	if poisonFreed {
		for i := range b {
			b[i] = 0xa5
		}
	}
	a.classes[cl].Put(unsafe.Pointer(unsafe.SliceData(b)))
}

// poisonFreed (environment SLUICE_ALLOC_POISON=1, set by make test) fills
// every recycled buffer with 0xa5 when it is freed, so that a use after
// release reads garbage, and a test's answers come out wrong, instead of
// reading the old values by luck.
var poisonFreed = os.Getenv("SLUICE_ALLOC_POISON") == "1"

// AllocSlice returns n zeroed elements of a pointer-free type T from
// Allocator (large tables: a recycled buffer instead of fresh pages faulted
// in one by one). Give it back with FreeSlice when done; a slice never
// freed is simply collected.
func AllocSlice[T any](n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero)) * n
	if size == 0 {
		return nil
	}
	b := Allocator.Allocate(size)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// FreeSlice returns an AllocSlice slice (whole, as allocated) to Allocator.
// The caller must not use it afterwards.
func FreeSlice[T any](s []T) {
	var zero T
	size := int(unsafe.Sizeof(zero)) * len(s)
	c := poolClass(size)
	if c < 0 {
		return // came from the Go heap directly
	}
	Allocator.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 1<<c))
}

// GrowSlice returns a slice holding s's elements with room for at least
// c, from Allocator: a recycled buffer (already in memory, as a store that
// grows by doubling would otherwise take fresh pages each time), whose
// elements past len(s) are whatever its last user left, so the caller
// writes them before reading them. T must hold no pointers. s must be nil
// or a slice from AllocSlice or GrowSlice; it is given back with FreeSlice
// and must not be used afterwards.
func GrowSlice[T any](s []T, c int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 || c <= cap(s) {
		return s
	}
	var b []byte
	if a, ok := Allocator.(*poolAllocator); ok {
		b, _ = a.take(size * c)
	} else {
		b = Allocator.Allocate(size * c)
	}
	// The buffer's whole size class is usable: FreeSlice of the longer
	// slice lands in the same class.
	ns := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/size)[:len(s)]
	copy(ns, s)
	FreeSlice(s[:cap(s)])
	return ns
}

// Unzeroed returns an allocator for buffers every byte of which their user
// writes before reading any (arrow-go's Parquet page reader: a compressed
// page is read into its buffer whole, and decompressed into another that
// it then checks is filled to the page's size): from Allocator, recycled
// buffers are handed over, and grown, without clearing them first. Any
// other allocator is returned as it is.
func Unzeroed(mem memory.Allocator) memory.Allocator {
	if a, ok := mem.(*poolAllocator); ok {
		return unzeroedAllocator{a}
	}
	return mem
}

// unzeroedAllocator is Allocator without the clearing of recycled bytes.
type unzeroedAllocator struct{ a *poolAllocator }

// Allocate implements memory.Allocator.
func (u unzeroedAllocator) Allocate(size int) []byte {
	buf, _ := u.a.take(size)
	return buf
}

// Reallocate implements memory.Allocator.
func (u unzeroedAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := u.Allocate(size)
	copy(nb, b)
	u.a.Free(b)
	return nb
}

// Free implements memory.Allocator.
func (u unzeroedAllocator) Free(b []byte) { u.a.Free(b) }
