package physical

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The scan decodes required INT64 columns written DELTA_BINARY_PACKED
// itself instead of through arrow's record reader: that reader unpacks
// each miniblock into a scratch slice, appends the values one by one to
// another and copies them out again, and was 15 % of the CPU of the 22
// TPC-H queries once their keys and prices were delta encoded. Here a
// page is unpacked and prefix-summed in one pass into a reused slice and
// batches are copied out of it. Any other column, or any page this code
// does not expect, keeps arrow's reader (or fails the read, loudly).

// deltaColumns returns, for each read field, whether the scan decodes it
// with a deltaColumn: a flat required INT64 column read as Int64 whose
// data pages in every row group read are all DELTA_BINARY_PACKED, without
// a dictionary page or encryption.
func deltaColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		if c < 0 || c >= len(m.Fields) {
			continue
		}
		sf := &m.Fields[c]
		if !sf.IsLeaf() || sf.Field.Type.ID() != arrow.INT64 {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		if col.PhysicalType() != parquet.Types.Int64 || col.MaxDefinitionLevel() != 0 || col.MaxRepetitionLevel() != 0 {
			continue
		}
		ok := true
		for _, rg := range rowGroups {
			cc, err := md.RowGroup(rg).ColumnChunk(sf.ColIndex)
			if err != nil || cc.HasDictionaryPage() || cc.CryptoMetadata() != nil {
				ok = false
				break
			}
			data := 0
			for _, st := range cc.EncodingStats() {
				if st.PageType != pageData && st.PageType != pageDataV2 {
					continue
				}
				data++
				if st.Encoding != parquet.Encodings.DeltaBinaryPacked {
					ok = false
				}
			}
			if !ok || data == 0 {
				ok = false
				break
			}
		}
		out[j] = ok
	}
	return out
}

// deltaColumn reads one column chosen by deltaColumns, row group after row
// group, in batches of any size.
type deltaColumn struct {
	rdr       *file.Reader
	leaf      int
	rowGroups []int // row groups still to open
	pages     file.PageReader
	vals      []int64 // the current page's values (reused page to page)
	pos       int     // next value of vals to hand out
}

func newDeltaColumn(rdr *file.Reader, leaf int, rowGroups []int) *deltaColumn {
	return &deltaColumn{rdr: rdr, leaf: leaf, rowGroups: rowGroups}
}

// read returns the next n values as an Int64 array.
func (c *deltaColumn) read(mem memory.Allocator, n int) (arrow.Array, error) {
	buf := newOutputBuffer(mem, n*8)
	out := arrow.Int64Traits.CastFromBytes(buf.Bytes())
	for done := 0; done < n; {
		if c.pos == len(c.vals) {
			if err := c.nextPage(); err != nil {
				buf.Release()
				return nil, err
			}
			continue
		}
		k := copy(out[done:], c.vals[c.pos:])
		c.pos += k
		done += k
	}
	data := array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer data.Release()
	return array.NewInt64Data(data), nil
}

// nextPage decodes the next data page into vals, opening the next row
// group when the current one has no page left.
func (c *deltaColumn) nextPage() error {
	for {
		if c.pages != nil && c.pages.Next() {
			break
		}
		if c.pages != nil {
			if err := c.pages.Err(); err != nil {
				return err
			}
			c.pages.Close()
			c.pages = nil
		}
		if len(c.rowGroups) == 0 {
			return errors.New("column ended before the row groups' row count")
		}
		pr, err := c.rdr.RowGroup(c.rowGroups[0]).GetColumnPageReader(c.leaf)
		if err != nil {
			return err
		}
		c.pages, c.rowGroups = pr, c.rowGroups[1:]
	}
	var data []byte
	switch p := c.pages.Page().(type) {
	case *file.DataPageV1:
		data = p.Data()
	case *file.DataPageV2:
		data = p.Data()[p.DefinitionLevelByteLen()+p.RepetitionLevelByteLen():]
	default:
		return fmt.Errorf("unexpected %T in a delta-encoded column", p)
	}
	p := c.pages.Page()
	if parquet.Encoding(p.Encoding()) != parquet.Encodings.DeltaBinaryPacked {
		return fmt.Errorf("data page encoded %s where DELTA_BINARY_PACKED was recorded", parquet.Encoding(p.Encoding()))
	}
	n := int(p.NumValues())
	if cap(c.vals) < n {
		c.vals = make([]int64, n)
	}
	c.vals, c.pos = c.vals[:n], 0
	if err := decodeDeltaBinaryPacked(data, c.vals); err != nil {
		c.vals = c.vals[:0]
		return err
	}
	return nil
}

// close releases the open page reader.
func (c *deltaColumn) close() {
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

var errDeltaCorrupt = errors.New("corrupt DELTA_BINARY_PACKED page")

// decodeDeltaBinaryPacked decodes a DELTA_BINARY_PACKED stream of exactly
// len(out) values into out. Layout (Parquet format spec): a header of
// uvarint block size, uvarint miniblocks per block, uvarint value count,
// zigzag first value; then blocks of a zigzag minimum delta, one bit width
// byte per miniblock, and the miniblocks, each block size / miniblocks
// deltas (minus the minimum) bit-packed little-endian. Sums wrap, as the
// writer's differences did.
func decodeDeltaBinaryPacked(data []byte, out []int64) error {
	blockSize, k := binary.Uvarint(data)
	if k <= 0 {
		return errDeltaCorrupt
	}
	data = data[k:]
	miniblocks, k := binary.Uvarint(data)
	if k <= 0 {
		return errDeltaCorrupt
	}
	data = data[k:]
	total, k := binary.Uvarint(data)
	if k <= 0 {
		return errDeltaCorrupt
	}
	data = data[k:]
	first, k := binary.Varint(data)
	if k <= 0 {
		return errDeltaCorrupt
	}
	data = data[k:]
	if total != uint64(len(out)) {
		return fmt.Errorf("%w: %d values where the page holds %d", errDeltaCorrupt, total, len(out))
	}
	if len(out) == 0 {
		return nil
	}
	if miniblocks == 0 || blockSize == 0 || blockSize%miniblocks != 0 || (blockSize/miniblocks)%8 != 0 || blockSize > 1<<20 {
		return fmt.Errorf("%w: block of %d values in %d miniblocks", errDeltaCorrupt, blockSize, miniblocks)
	}
	perMini := int(blockSize / miniblocks)
	out[0] = first
	last := first
	i := 1
	for i < len(out) {
		minDelta, k := binary.Varint(data)
		if k <= 0 || len(data) < k+int(miniblocks) {
			return errDeltaCorrupt
		}
		widths := data[k : k+int(miniblocks)]
		data = data[k+int(miniblocks):]
		for _, w := range widths {
			if i == len(out) {
				break
			}
			if w > 64 {
				return fmt.Errorf("%w: bit width %d", errDeltaCorrupt, w)
			}
			size := perMini * int(w) / 8
			if len(data) < size {
				return errDeltaCorrupt
			}
			m := min(perMini, len(out)-i)
			// The whole rest of the page goes in, so that 8-byte loads
			// near the miniblock's end can read past it.
			last = unpackDeltas(data, int(w), m, uint64(minDelta), uint64(last), out[i:i+m])
			data = data[size:]
			i += m
		}
	}
	return nil
}

// unpackDeltas unpacks the first n w-bit deltas of the miniblock at the
// start of mb, adds minDelta to each and sums them onto last into out; it
// returns the last value. All in uint64, so that sums wrap as the writer's
// differences did.
func unpackDeltas(mb []byte, w, n int, minDelta, last uint64, out []int64) int64 {
	if w == 0 {
		for j := range out[:n] {
			last += minDelta
			out[j] = int64(last)
		}
		return int64(last)
	}
	mask := uint64(1)<<w - 1
	if w == 64 {
		mask = ^uint64(0)
	}
	j := 0
	if w <= 56 {
		// Whole 8-byte loads while they stay inside mb.
		safe := 0
		if len(mb) >= 8 {
			safe = min(n, ((len(mb)-8)*8)/w+1)
		}
		o := out[:safe]
		k0 := 0
		if w <= 14 {
			// Four values per 8-byte load.
			for ; k0+3 < len(o); k0 += 4 {
				bit := k0 * w
				word := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7)
				last += minDelta + word&mask
				o[k0] = int64(last)
				last += minDelta + (word>>w)&mask
				o[k0+1] = int64(last)
				last += minDelta + (word>>(2*w))&mask
				o[k0+2] = int64(last)
				last += minDelta + (word>>(3*w))&mask
				o[k0+3] = int64(last)
			}
		}
		if w <= 28 {
			// Two values per 8-byte load.
			for ; k0+1 < len(o); k0 += 2 {
				bit := k0 * w
				word := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7)
				last += minDelta + word&mask
				o[k0] = int64(last)
				last += minDelta + (word>>w)&mask
				o[k0+1] = int64(last)
			}
		}
		for k := k0; k < len(o); k++ {
			bit := k * w
			v := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7) & mask
			last += minDelta + v
			o[k] = int64(last)
		}
		j = safe
	}
	for ; j < n; j++ {
		last += minDelta + readBits(mb, j*w, w)
		out[j] = int64(last)
	}
	return int64(last)
}

// readBits reads the w-bit little-endian value at bit offset bit of b,
// byte by byte (the end of a page, and widths above 56).
func readBits(b []byte, bit, w int) uint64 {
	var v uint64
	for got := 0; got < w; {
		byteIdx, off := (bit+got)>>3, (bit+got)&7
		take := min(8-off, w-got)
		v |= uint64(b[byteIdx]>>off) & (uint64(1)<<take - 1) << got
		got += take
	}
	return v
}
