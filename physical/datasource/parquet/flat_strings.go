package parquet

import (
	"encoding/binary"
	"fmt"
	"slices"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// flatStringEncodings are the encodings a string chunk read by a
// flatStrings may list.
var flatStringEncodings = []parquet.Encoding{
	parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE,
	parquet.Encodings.DeltaLengthByteArray, parquet.Encodings.DeltaByteArray,
}

// flatStringColumns returns, for each read field, whether the scan reads
// it with a flatStrings: a flat utf8 leaf read as a string (not as a
// dictionary), in chunks of PLAIN and dictionary pages.
func flatStringColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil || sf.Field.Type.ID() != arrow.STRING {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		if col.PhysicalType() != parquet.Types.ByteArray {
			continue
		}
		if _, isString := col.LogicalType().(schema.StringLogicalType); !isString && col.ConvertedType() != schema.ConvertedTypes.UTF8 {
			continue
		}
		out[j] = flatChunks(md, sf.ColIndex, rowGroups, flatStringEncodings)
	}
	return out
}

// flatStrings reads a flat string column of PLAIN, dictionary,
// DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY pages into utf8 arrays, in
// batches of any size.
type flatStrings struct {
	pages    columnPages
	maxDef   int16
	levels   levelDecoder
	page     flatPage
	dictPage bool // the current page holds dictionary codes
	codes    codeDecoder
	// The open row group's dictionary: entry i is dictBytes[dictOffs[i]:dictOffs[i+1]].
	dictOffs  []int32
	dictBytes []byte
	haveDict  bool
	idx       []int32
	bytes     []byte // the batch's value bytes, before they are copied out
	// A delta-encoded page, decoded whole at its start: value i is
	// deltaBytes[deltaOffs[i]:deltaOffs[i+1]]; deltaAt is the next.
	deltaPage  bool
	deltaOffs  []int
	deltaBytes []byte
	deltaAt    int
	lens       []int64 // scratch
}

func newFlatStrings(rdr *file.Reader, leaf int, rowGroups []int) *flatStrings {
	return &flatStrings{
		pages:  columnPages{rdr: rdr, leaf: leaf, rowGroups: rowGroups},
		maxDef: rdr.MetaData().Schema.Column(leaf).MaxDefinitionLevel(),
	}
}

// read returns the next n values as a utf8 array.
func (c *flatStrings) Read(mem memory.Allocator, n int) (arrow.Array, error) {
	offBuf := mempool.NewOutputBuffer(mem, (n+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())[:n+1]
	offs[0] = 0
	var pv pieceValidity // the piece's validity, made at the first page with NULLs
	nulls := 0
	c.bytes = c.bytes[:0]
	fail := func(err error) (arrow.Array, error) {
		offBuf.Release()
		pv.release()
		return nil, err
	}
	for done := 0; done < n; {
		if c.page.rows == 0 {
			if err := c.nextPage(); err != nil {
				return fail(err)
			}
			continue
		}
		k := min(c.page.rows, n-done)
		nn, err := pv.take(mem, n, c.page.levels, done, k)
		if err != nil {
			return fail(err)
		}
		// Value i of the piece ends at ends[i]; NULL rows repeat the
		// previous end.
		ends := offs[done+1 : done+1+k]
		if err := c.decode(ends[:nn], nn); err != nil {
			return fail(err)
		}
		if nn < k {
			j := nn - 1
			for i := k - 1; i >= 0 && i > j; i-- {
				if bitutil.BitIsSet(pv.bitmap, done+i) {
					ends[i] = ends[j]
					j--
				} else if j >= 0 {
					ends[i] = ends[j]
				} else {
					ends[i] = offs[done]
				}
			}
			nulls += k - nn
		}
		c.page.rows -= k
		done += k
	}
	if len(c.bytes) > 1<<31-1 {
		return fail(fmt.Errorf("a batch of %d bytes of strings is too large", len(c.bytes)))
	}
	valBuf := mempool.NewOutputBuffer(mem, len(c.bytes))
	copy(valBuf.Bytes(), c.bytes)
	bufs := []*memory.Buffer{nil, offBuf, valBuf}
	if nulls > 0 {
		bufs[0] = pv.buf
	}
	data := array.NewData(arrow.BinaryTypes.String, n, bufs, nil, nulls, 0)
	offBuf.Release()
	valBuf.Release()
	pv.release()
	defer data.Release()
	return array.NewStringData(data), nil
}

// decode appends the page's next nn values to c.bytes and writes where
// each ends into ends.
func (c *flatStrings) decode(ends []int32, nn int) error {
	if nn == 0 {
		return nil
	}
	if c.deltaPage {
		if c.deltaAt+nn > len(c.deltaOffs)-1 {
			return fmt.Errorf("corrupt delta-encoded strings: %d values wanted, %d left", nn, len(c.deltaOffs)-1-c.deltaAt)
		}
		for i := range nn {
			v := c.deltaAt + i
			c.bytes = append(c.bytes, c.deltaBytes[c.deltaOffs[v]:c.deltaOffs[v+1]]...)
			ends[i] = int32(len(c.bytes))
		}
		c.deltaAt += nn
		return nil
	}
	if !c.dictPage {
		data := c.page.values
		pos := 0
		for i := range nn {
			if len(data)-pos < 4 {
				return fmt.Errorf("corrupt PLAIN page: value %d is cut off", i)
			}
			l := int(binary.LittleEndian.Uint32(data[pos:]))
			if l > len(data)-pos-4 {
				return fmt.Errorf("corrupt PLAIN page: value %d is cut off", i)
			}
			c.bytes = append(c.bytes, data[pos+4:pos+4+l]...)
			ends[i] = int32(len(c.bytes))
			pos += 4 + l
		}
		c.page.values = data[pos:]
		return nil
	}
	if c.idx == nil {
		c.idx = make([]int32, dictNumScratch)
	}
	entries := len(c.dictOffs) - 1
	for done := 0; done < nn; {
		idx := c.idx[:min(len(c.idx), nn-done)]
		k, err := c.codes.decode(idx, entries)
		if err != nil {
			return err
		}
		if k == 0 {
			return fmt.Errorf("%w: the page's codes ended early", errCodesCorrupt)
		}
		for i, code := range idx[:k] {
			c.bytes = append(c.bytes, c.dictBytes[c.dictOffs[code]:c.dictOffs[code+1]]...)
			ends[done+i] = int32(len(c.bytes))
		}
		done += k
	}
	return nil
}

// nextPage moves to the next data page, reading a dictionary page on the
// way.
func (c *flatStrings) nextPage() error {
	p, err := c.pages.next()
	if err != nil {
		return err
	}
	if dp, ok := p.(*file.DictionaryPage); ok {
		if err := plainDictionaryPage(dp); err != nil {
			return err
		}
		count, data := int(dp.NumValues()), dp.Data()
		if count < 0 || count > len(data)/4 {
			return fmt.Errorf("%w: %d values in %d bytes", errDictCorrupt, count, len(data))
		}
		c.dictOffs = slices.Grow(c.dictOffs[:0], count+1)[:1]
		c.dictOffs[0] = 0
		c.dictBytes = c.dictBytes[:0]
		pos := 0
		for i := range count {
			if len(data)-pos < 4 {
				return fmt.Errorf("%w: value %d of %d is cut off", errDictCorrupt, i, count)
			}
			l := int(binary.LittleEndian.Uint32(data[pos:]))
			if l > len(data)-pos-4 {
				return fmt.Errorf("%w: value %d of %d is cut off", errDictCorrupt, i, count)
			}
			c.dictBytes = append(c.dictBytes, data[pos+4:pos+4+l]...)
			c.dictOffs = append(c.dictOffs, int32(len(c.dictBytes)))
			pos += 4 + l
		}
		c.haveDict = true
		return nil
	}
	if c.page, err = splitDataPage(p, c.maxDef, &c.levels); err != nil {
		return err
	}
	c.dictPage, c.deltaPage = false, false
	switch enc := parquet.Encoding(p.Encoding()); enc {
	case parquet.Encodings.Plain:
		return nil
	case parquet.Encodings.DeltaLengthByteArray:
		c.deltaPage = true
		return c.deltaLengths(c.page.values)
	case parquet.Encodings.DeltaByteArray:
		c.deltaPage = true
		return c.deltaStrings(c.page.values)
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if !c.haveDict {
			return fmt.Errorf("data page before the dictionary page")
		}
		c.dictPage = true
		if len(c.page.values) == 0 {
			c.codes = codeDecoder{}
			return nil
		}
		return c.codes.reset(c.page.values, c.page.rows)
	default:
		return fmt.Errorf("data page encoded %s, which the scan's string reader does not take", enc)
	}
}

// deltaInts decodes a DELTA_BINARY_PACKED run of at most rows values
// from the front of data into c.lens and returns the bytes after it.
func (c *flatStrings) deltaInts(data []byte) ([]int64, []byte, error) {
	var d deltaDecoder
	if err := d.resetUpTo(data, -1, c.page.rows); err != nil {
		return nil, nil, err
	}
	out := slices.Grow(c.lens[:0], d.left)[:d.left]
	c.lens = out
	if k, err := d.decode(out); err != nil || k != len(out) {
		return nil, nil, errDeltaCorrupt
	}
	return out, d.data, nil
}

// deltaLengths decodes a DELTA_LENGTH_BYTE_ARRAY page: the values'
// lengths, DELTA_BINARY_PACKED, then their bytes one after another.
func (c *flatStrings) deltaLengths(data []byte) error {
	lens, rest, err := c.deltaInts(data)
	if err != nil {
		return fmt.Errorf("DELTA_LENGTH_BYTE_ARRAY lengths: %w", err)
	}
	c.deltaOffs = append(c.deltaOffs[:0], 0)
	at := 0
	for _, l := range lens {
		if l < 0 || l > int64(len(rest)-at) {
			return fmt.Errorf("corrupt DELTA_LENGTH_BYTE_ARRAY page: a value of %d bytes where %d are left", l, len(rest)-at)
		}
		at += int(l)
		c.deltaOffs = append(c.deltaOffs, at)
	}
	c.deltaBytes, c.deltaAt = rest, 0
	return nil
}

// deltaStrings decodes a DELTA_BYTE_ARRAY page: the lengths of the
// prefixes each value shares with the one before, DELTA_BINARY_PACKED,
// then the suffixes as DELTA_LENGTH_BYTE_ARRAY.
func (c *flatStrings) deltaStrings(data []byte) error {
	prefixes, rest, err := c.deltaInts(data)
	if err != nil {
		return fmt.Errorf("DELTA_BYTE_ARRAY prefix lengths: %w", err)
	}
	prefixes = slices.Clone(prefixes)
	if err := c.deltaLengths(rest); err != nil {
		return err
	}
	if len(prefixes) != len(c.deltaOffs)-1 {
		return fmt.Errorf("corrupt DELTA_BYTE_ARRAY page: %d prefixes, %d suffixes", len(prefixes), len(c.deltaOffs)-1)
	}
	suffixes, offs := c.deltaBytes, c.deltaOffs
	var out []byte
	newOffs := make([]int, 1, len(offs))
	prev := 0 // where the previous value starts in out
	for i, p := range prefixes {
		if p < 0 || (i == 0 && p != 0) || (i > 0 && p > int64(newOffs[i]-prev)) {
			return fmt.Errorf("corrupt DELTA_BYTE_ARRAY page: value %d shares %d bytes of the previous", i, p)
		}
		start := len(out)
		out = append(out, out[prev:prev+int(p)]...)
		out = append(out, suffixes[offs[i]:offs[i+1]]...)
		prev = start
		newOffs = append(newOffs, len(out))
	}
	c.deltaOffs, c.deltaBytes, c.deltaAt = newOffs, out, 0
	return nil
}

func (c *flatStrings) Close() {
	c.pages.close()
}
