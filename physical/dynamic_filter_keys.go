package physical

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cespare/xxhash/v2"

	"sluice/physical/mempool"
	"sluice/rpc"
)

// Key sets of cross-stage dynamic filters (dynamic_filter.go). A build
// stage's task collects the keys its output rows carry in a keyBuilder;
// the scheduler merges the tasks' sets into one (MergeKeySets) and hands
// it to the probe stage's tasks, whose scans drop rows with a key not in
// it. Integer keys are kept exactly, as a bitmap over their range, while
// the range is at most maxDynamicSpan values; wider integer ranges and
// strings go into a bloom filter of fixed size, so that the sets of all
// tasks can be merged by OR-ing their words. A set never loses a key: a
// bloom filter only keeps some keys that are not in it.

// KeySet is the keys of one dynamic filter: exact (a bitmap over integer
// keys) or approximate (a bloom filter). Immutable once built.
type KeySet struct {
	strings bool
	bitmap  *keyBitmap // exact integer keys; nil when bloom is set
	bloom   []uint64   // bloomBits bits
	lo, hi  int64      // integer keys: smallest and largest (bloom too)
	empty   bool       // no key at all
	count   int64
}

const (
	// maxDynamicSpan bounds a dynamic filter's bitmap (1 MiB): beyond,
	// integer keys go into a bloom filter.
	maxDynamicSpan = 1 << 23
	// bloomBits is the size of every bloom filter (512 KiB): about 7 %
	// false positives at a million keys.
	bloomBits = 1 << 22
	// maxKeySetBytes bounds a set's encoding (compressed): a larger one is
	// not sent (the probe side is then not filtered).
	maxKeySetBytes = 2 << 20
)

// Strings reports whether the set holds string keys.
func (k *KeySet) Strings() bool { return k.strings }

// Count is the number of keys added (duplicates across tasks included).
func (k *KeySet) Count() int64 { return k.count }

// String describes the set for logs and tests.
func (k *KeySet) String() string {
	switch {
	case k.empty:
		return "empty"
	case k.bloom != nil && k.strings:
		return fmt.Sprintf("bloom(strings, %d keys)", k.count)
	case k.bloom != nil:
		return fmt.Sprintf("bloom([%d, %d], %d keys)", k.lo, k.hi, k.count)
	}
	return fmt.Sprintf("bitmap([%d, %d], %d keys)", k.lo, k.hi, k.count)
}

// bloomIndexes are the three bits of hash h.
func bloomIndexes(h uint64) [3]uint64 {
	h2 := h>>32 | h<<32 | 1
	return [3]uint64{h & (bloomBits - 1), (h + h2) & (bloomBits - 1), (h + 2*h2) & (bloomBits - 1)}
}

func bloomAdd(b []uint64, h uint64) {
	for _, i := range bloomIndexes(h) {
		b[i>>6] |= 1 << (i & 63)
	}
}

func bloomHas(b []uint64, h uint64) bool {
	for _, i := range bloomIndexes(h) {
		if b[i>>6]>>(i&63)&1 == 0 {
			return false
		}
	}
	return true
}

func intKeyHash(v int64) uint64 { return mix(uint64(v) ^ 0x5bd1e995) }

func stringKeyHash(s []byte) uint64 { return xxhash.Sum64(s) }

// hasInt reports whether integer key v may be in the set.
func (k *KeySet) hasInt(v int64) bool {
	if k.empty || v < k.lo || v > k.hi {
		return false
	}
	if k.bitmap != nil {
		d := uint64(v - k.bitmap.lo)
		return d < k.bitmap.span && k.bitmap.bits[d>>6]>>(d&63)&1 == 1
	}
	return bloomHas(k.bloom, intKeyHash(v))
}

// anyIn reports whether the set may hold an integer key in [mn, mx].
func (k *KeySet) anyIn(mn, mx int64) bool {
	if k.empty || k.strings || mx < k.lo || mn > k.hi {
		return k.strings
	}
	if k.bitmap != nil {
		return k.bitmap.anyIn(mn, mx)
	}
	mn, mx = max(mn, k.lo), min(mx, k.hi)
	if uint64(mx-mn) >= 64 {
		return true
	}
	for v := mn; ; v++ {
		if bloomHas(k.bloom, intKeyHash(v)) {
			return true
		}
		if v == mx {
			return false
		}
	}
}

// selectKeys keeps, of sel (all rows when nil), the rows of col whose key
// may be in the set; NULL never is. A column of a type the set cannot
// judge keeps every row.
func (k *KeySet) selectKeys(col arrow.Array, sel []int32) []int32 {
	if k.bitmap != nil && !k.empty {
		return k.bitmap.selectKeys(col, sel)
	}
	var keep func(i int) bool
	switch a := col.(type) {
	case *array.Int64:
		if k.strings {
			return sel
		}
		vals := a.Int64Values()
		keep = func(i int) bool { return a.IsValid(i) && k.hasInt(vals[i]) }
	case *array.Int32:
		if k.strings {
			return sel
		}
		vals := a.Int32Values()
		keep = func(i int) bool { return a.IsValid(i) && k.hasInt(int64(vals[i])) }
	case *array.String:
		if !k.strings {
			return sel
		}
		keep = func(i int) bool { return a.IsValid(i) && k.hasString(a.Value(i)) }
	case *array.LargeString:
		if !k.strings {
			return sel
		}
		keep = func(i int) bool { return a.IsValid(i) && k.hasString(a.Value(i)) }
	case *array.Dictionary:
		dict, ok := a.Dictionary().(*array.String)
		if !ok || !k.strings {
			return sel
		}
		// Each dictionary entry is judged once.
		in := make([]bool, dict.Len())
		for j := range in {
			in[j] = dict.IsValid(j) && k.hasString(dict.Value(j))
		}
		keep = func(i int) bool { return a.IsValid(i) && in[a.GetValueIndex(i)] }
	default:
		return sel
	}
	n := 0
	if sel == nil {
		sel = make([]int32, 0, col.Len())
		for i := 0; i < col.Len(); i++ {
			if keep(i) {
				sel = append(sel, int32(i))
			}
		}
		return sel
	}
	for _, i := range sel {
		if keep(int(i)) {
			sel[n] = i
			n++
		}
	}
	return sel[:n]
}

func (k *KeySet) hasString(s string) bool {
	if k.empty {
		return false
	}
	return bloomHas(k.bloom, stringKeyHash([]byte(s)))
}

// keyBuilder collects the keys of one column across a task's partitions.
// Safe for concurrent use.
type keyBuilder struct {
	mu      sync.Mutex
	strings bool // string keys (from the column's type), else integers
	count   int64
	lo, hi  int64
	base    int64    // bitmap words cover [base, base+64*len(words)); base%64 == 0
	words   []uint64 // nil until the first key, or once bloom is in use
	bloom   []uint64
	failed  bool // a key type the set cannot hold, or no memory: no filter
	// res, when set, holds the bytes of words and bloom in the task's pool.
	res *mempool.Reservation
}

// add adds the non-NULL keys of col. When the task's pool refuses the
// memory the keys need, the builder gives up (the filter is not sent)
// rather than failing the query: a filter only saves work.
func (b *keyBuilder) add(col arrow.Array) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed {
		return
	}
	defer b.account()
	switch a := col.(type) {
	case *array.Int64:
		if b.strings {
			b.failed = true
			return
		}
		vals := a.Int64Values()
		for i, v := range vals {
			if a.IsValid(i) {
				b.addInt(v)
			}
		}
	case *array.Int32:
		if b.strings {
			b.failed = true
			return
		}
		vals := a.Int32Values()
		for i, v := range vals {
			if a.IsValid(i) {
				b.addInt(int64(v))
			}
		}
	case *array.String:
		if !b.strings {
			b.failed = true
			return
		}
		b.useBloom()
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				bloomAdd(b.bloom, stringKeyHash([]byte(a.Value(i))))
				b.count++
			}
		}
	case *array.LargeString:
		if !b.strings {
			b.failed = true
			return
		}
		b.useBloom()
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				bloomAdd(b.bloom, stringKeyHash([]byte(a.Value(i))))
				b.count++
			}
		}
	default:
		b.failed = true
	}
}

// account brings the reservation to the size of words and bloom.
func (b *keyBuilder) account() {
	if b.res == nil {
		return
	}
	size := 8 * int64(len(b.words)+len(b.bloom))
	if b.failed {
		size = 0
	}
	if d := size - b.res.Size(); d > 0 {
		if err := b.res.Grow(d); err != nil {
			b.failed, b.words, b.bloom = true, nil, nil
			b.res.Free()
		}
	} else if d < 0 {
		b.res.Shrink(-d)
	}
}

func (b *keyBuilder) useBloom() {
	if b.bloom == nil {
		b.bloom = make([]uint64, bloomBits/64)
	}
}

func (b *keyBuilder) addInt(v int64) {
	if b.count == 0 || v < b.lo {
		b.lo = v
	}
	if b.count == 0 || v > b.hi {
		b.hi = v
	}
	b.count++
	if b.bloom != nil {
		bloomAdd(b.bloom, intKeyHash(v))
		return
	}
	if b.words == nil || v < b.base || uint64(v-b.base) >= uint64(len(b.words))*64 {
		if !b.grow(v) {
			b.toBloom()
			bloomAdd(b.bloom, intKeyHash(v))
			return
		}
	}
	d := uint64(v - b.base)
	b.words[d>>6] |= 1 << (d & 63)
}

// grow widens the bitmap to cover the keys so far, b.lo to b.hi (with
// room to spare in the direction it grows), or reports that the range
// would be too wide.
func (b *keyBuilder) grow(v int64) bool {
	if b.hi-b.lo < 0 || uint64(b.hi-b.lo) >= maxDynamicSpan {
		return false
	}
	old := uint64(len(b.words)) * 64
	newBase := b.lo &^ 63
	if b.words != nil {
		newBase = min(newBase, b.base)
		if v < b.base {
			// Growing down: leave as much room again below.
			room := int64(min(old, maxDynamicSpan))
			if newBase >= math.MinInt64+room+64 {
				newBase = (newBase - room) &^ 63
			}
		}
	}
	need := uint64(b.hi-newBase) + 1
	if b.words != nil {
		keep := uint64(b.base-newBase) + old
		need = max(need, keep)
		if v >= b.base {
			// Growing up: double.
			need = max(need, min(keep+old, need+maxDynamicSpan))
		}
	}
	need = (need + 63) &^ 63
	words := make([]uint64, need/64)
	if b.words != nil {
		copy(words[(b.base-newBase)/64:], b.words)
	}
	b.base, b.words = newBase, words
	return true
}

func (b *keyBuilder) toBloom() {
	b.useBloom()
	for w, word := range b.words {
		for word != 0 {
			t := bits.TrailingZeros64(word)
			bloomAdd(b.bloom, intKeyHash(b.base+int64(w*64+t)))
			word &= word - 1
		}
	}
	b.words = nil
}

// keys returns the set built, or nil when the column's type cannot be
// filtered on.
func (b *keyBuilder) keys() *KeySet {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed {
		return nil
	}
	k := &KeySet{strings: b.strings, lo: b.lo, hi: b.hi, count: b.count}
	switch {
	case b.count == 0:
		k.empty = true
	case b.bloom != nil:
		k.bloom = b.bloom
	default:
		from := (b.lo&^63 - b.base) / 64
		to := (b.hi-b.base)/64 + 1
		words := b.words[from:to]
		k.bitmap = &keyBitmap{lo: b.base + from*64, span: uint64(len(words)) * 64, bits: words}
	}
	return k
}

// MergeKeySets is the union of sets (nil when any is nil: a task that
// could not collect its keys leaves the filter unknown).
func MergeKeySets(sets []*KeySet) *KeySet {
	if len(sets) == 0 {
		return nil
	}
	var out KeySet
	out.empty = true
	exact := true
	for i, s := range sets {
		if s == nil {
			return nil
		}
		if i > 0 && s.strings != out.strings {
			return nil
		}
		out.strings = s.strings
		out.count += s.count
		if s.empty {
			continue
		}
		if out.empty || s.lo < out.lo {
			out.lo = s.lo
		}
		if out.empty || s.hi > out.hi {
			out.hi = s.hi
		}
		out.empty = false
		exact = exact && s.bitmap != nil
	}
	if out.empty {
		return &out
	}
	if exact && out.hi-out.lo >= 0 && uint64(out.hi-out.lo) < maxDynamicSpan {
		lo := out.lo &^ 63
		span := (uint64(out.hi-lo) + 64) &^ 63
		bm := &keyBitmap{lo: lo, span: span, bits: make([]uint64, span/64)}
		for _, s := range sets {
			if s.empty {
				continue
			}
			off := (s.bitmap.lo - lo) / 64
			for w, word := range s.bitmap.bits {
				bm.bits[off+int64(w)] |= word
			}
		}
		out.bitmap = bm
		return &out
	}
	out.bloom = make([]uint64, bloomBits/64)
	for _, s := range sets {
		switch {
		case s.empty:
		case s.bloom != nil:
			for w, word := range s.bloom {
				out.bloom[w] |= word
			}
		default:
			for w, word := range s.bitmap.bits {
				for word != 0 {
					t := bits.TrailingZeros64(word)
					bloomAdd(out.bloom, intKeyHash(s.bitmap.lo+int64(w*64+t)))
					word &= word - 1
				}
			}
		}
	}
	return &out
}

// EncodeKeySet is the message of filter id's keys k, or an error when it
// would be too large to send.
func EncodeKeySet(id int, k *KeySet) (*rpc.DynamicFilterKeys, error) {
	m := &rpc.DynamicFilterKeys{Id: int32(id), Strings: k.strings, Lo: k.lo, Hi: k.hi, Empty: k.empty, Count: k.count}
	var words []uint64
	switch {
	case k.empty:
	case k.bitmap != nil:
		if k.bitmap.lo != k.lo&^63 {
			return nil, fmt.Errorf("dynamic filter %d: bitmap at %d for keys from %d", id, k.bitmap.lo, k.lo)
		}
		words = k.bitmap.bits
	default:
		m.Bloom, words = true, k.bloom
	}
	if words != nil {
		var buf bytes.Buffer
		w, err := flate.NewWriter(&buf, flate.BestSpeed)
		if err != nil {
			return nil, err
		}
		raw := make([]byte, 8*len(words))
		for i, x := range words {
			binary.LittleEndian.PutUint64(raw[8*i:], x)
		}
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if buf.Len() > maxKeySetBytes {
			return nil, fmt.Errorf("dynamic filter %d: %d bytes compressed, more than %d", id, buf.Len(), maxKeySetBytes)
		}
		m.Words = buf.Bytes()
	}
	return m, nil
}

// DecodeKeySet is the set of m, checked; nil (no error) when m says the
// keys are unknown.
func DecodeKeySet(m *rpc.DynamicFilterKeys) (*KeySet, error) {
	if m.Unknown {
		return nil, nil
	}
	k := &KeySet{strings: m.Strings, lo: m.Lo, hi: m.Hi, empty: m.Empty, count: m.Count}
	if k.empty {
		return k, nil
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(m.Words)), maxDynamicSpan/8+bloomBits/8+1))
	if err != nil {
		return nil, fmt.Errorf("dynamic filter %d: %w", m.Id, err)
	}
	if len(raw)%8 != 0 || len(raw) == 0 {
		return nil, fmt.Errorf("dynamic filter %d: %d bytes of words", m.Id, len(raw))
	}
	words := make([]uint64, len(raw)/8)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	if m.Bloom {
		if len(words) != bloomBits/64 {
			return nil, fmt.Errorf("dynamic filter %d: bloom filter of %d words, want %d", m.Id, len(words), bloomBits/64)
		}
		k.bloom = words
		return k, nil
	}
	if m.Strings {
		return nil, errors.New("dynamic filter of strings without a bloom filter")
	}
	// A bitmap starts at the smallest key rounded down to a word.
	base := m.Lo &^ 63
	if uint64(len(words))*64 > maxDynamicSpan+128 || m.Hi < m.Lo || uint64(m.Hi-base) >= uint64(len(words))*64 {
		return nil, fmt.Errorf("dynamic filter %d: bitmap of %d words does not cover [%d, %d]", m.Id, len(words), m.Lo, m.Hi)
	}
	k.bitmap = &keyBitmap{lo: base, span: uint64(len(words)) * 64, bits: words}
	return k, nil
}
