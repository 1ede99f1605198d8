package parquet

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The scan also decodes required INT32 and INT64 columns that are
// dictionary-encoded throughout (dates, quantities, discounts, taxes, line
// numbers) itself. arrow's record reader unpacks each page's codes into a
// scratch slice, gathers the values into another and copies them into the
// batch through its record machinery: 18 % of the CPU of the 22 TPC-H
// queries on the cluster. Here the codes of a stretch of rows are unpacked
// (codeDecoder, shared with the string columns, range-checked against the
// dictionary) into a small scratch slice that stays in cache and gathered
// from the row group's dictionary straight into the batch. The arrays are
// those arrow's reader gives for the column read as stored (Int32 or
// Int64), so dates, decimals read raw and integers are shaped as before.

// dictNumColumns returns, for each read field, whether the scan reads it
// with a dictNumColumn: a flat required INT32 or INT64 column read as its
// stored type whose chunks in every row group read hold a dictionary page
// and dictionary-encoded data pages only, without encryption.
func dictNumColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		switch {
		case col.PhysicalType() == parquet.Types.Int32 && sf.Field.Type.ID() == arrow.INT32:
		case col.PhysicalType() == parquet.Types.Int64 && sf.Field.Type.ID() == arrow.INT64:
		default:
			continue
		}
		if col.MaxDefinitionLevel() != 0 || col.MaxRepetitionLevel() != 0 {
			continue
		}
		out[j] = dictionaryOnly(md, sf.ColIndex, rowGroups, true)
	}
	return out
}

// newDictNumColumn returns the reader of leaf, an INT32 or INT64 column
// chosen by dictNumColumns.
func newDictNumColumn(rdr *file.Reader, leaf int, rowGroups []int) Column {
	pages := columnPages{rdr: rdr, leaf: leaf, rowGroups: rowGroups}
	if rdr.MetaData().Schema.Column(leaf).PhysicalType() == parquet.Types.Int32 {
		return &dictNumColumn[int32]{pages: pages, typ: arrow.PrimitiveTypes.Int32}
	}
	return &dictNumColumn[int64]{pages: pages, typ: arrow.PrimitiveTypes.Int64}
}

// dictNumScratch is how many codes dictNumColumn unpacks before gathering
// their values: 16 KiB, which stays in the first-level cache.
const dictNumScratch = 4096

// dictNumColumn reads a dictionary-encoded INT32 or INT64 column as plain
// values, in batches of any size.
type dictNumColumn[T int32 | int64] struct {
	pages    columnPages
	typ      arrow.DataType
	dict     []T         // the open row group's dictionary
	haveDict bool        // a dictionary page was read
	codes    codeDecoder // over the current data page
	idx      []int32     // scratch codes
}

// read returns the next n values as an Int32 or Int64 array.
func (c *dictNumColumn[T]) Read(mem memory.Allocator, n int) (arrow.Array, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	buf := mempool.NewOutputBuffer(mem, n*size)
	out := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
	if c.idx == nil {
		c.idx = make([]int32, dictNumScratch)
	}
	for done := 0; done < n; {
		if c.codes.left == 0 {
			if err := c.nextPage(); err != nil {
				buf.Release()
				return nil, err
			}
			continue
		}
		k, err := c.codes.decode(c.idx[:min(len(c.idx), n-done)], len(c.dict))
		if err != nil {
			buf.Release()
			return nil, err
		}
		gatherDict(out[done:done+k], c.dict, c.idx[:k])
		done += k
	}
	data := array.NewData(c.typ, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer data.Release()
	return array.MakeFromData(data), nil
}

// gatherDict sets out[i] = dict[codes[i]]; the codes were checked against
// len(dict) as they were decoded.
func gatherDict[T int32 | int64](out, dict []T, codes []int32) {
	out = out[:len(codes)]
	for i, k := range codes {
		out[i] = dict[k]
	}
}

// nextPage moves to the next data page, reading the dictionary page that
// opens each row group on the way.
func (c *dictNumColumn[T]) nextPage() error {
	p, err := c.pages.next()
	if err != nil {
		return err
	}
	if dp, ok := p.(*file.DictionaryPage); ok {
		if err := plainDictionaryPage(dp); err != nil {
			return err
		}
		var zero T
		size := int(unsafe.Sizeof(zero))
		count, data := int(dp.NumValues()), dp.Data()
		if count < 0 || count > len(data)/size {
			return fmt.Errorf("%w: %d values of %d bytes in %d bytes", errDictCorrupt, count, size, len(data))
		}
		// PLAIN values are little-endian; a dictionary holds a few
		// thousand at most, so they are read one by one.
		c.dict = slices.Grow(c.dict[:0], count)[:count]
		for i := range c.dict {
			if size == 4 {
				c.dict[i] = T(int32(binary.LittleEndian.Uint32(data[i*4:])))
			} else {
				c.dict[i] = T(int64(binary.LittleEndian.Uint64(data[i*8:])))
			}
		}
		c.haveDict = true
		return nil
	}
	return c.codes.startPage(p, c.haveDict)
}

func (c *dictNumColumn[T]) Close() {
	c.pages.close()
	c.dict = nil
}
