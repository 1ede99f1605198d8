package catalog

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want arrow.DataType
		err  string
	}{
		{"INT", arrow.PrimitiveTypes.Int32, ""},
		{"integer", arrow.PrimitiveTypes.Int32, ""},
		{"SmallInt", arrow.PrimitiveTypes.Int32, ""},
		{"BIGINT", arrow.PrimitiveTypes.Int64, ""},
		{"double", arrow.PrimitiveTypes.Float64, ""},
		{"DOUBLE  PRECISION", arrow.PrimitiveTypes.Float64, ""},
		{"float", arrow.PrimitiveTypes.Float64, ""},
		{"REAL", arrow.PrimitiveTypes.Float64, ""},
		{"DECIMAL(15,2)", &arrow.Decimal128Type{Precision: 15, Scale: 2}, ""},
		{"numeric( 12 , 4 )", &arrow.Decimal128Type{Precision: 12, Scale: 4}, ""},
		{"DECIMAL", &arrow.Decimal128Type{Precision: 38, Scale: 10}, ""},
		{"DECIMAL(7)", &arrow.Decimal128Type{Precision: 7, Scale: 0}, ""},
		{"VARCHAR", arrow.BinaryTypes.String, ""},
		{"varchar(25)", arrow.BinaryTypes.String, ""},
		{"CHAR(1)", arrow.BinaryTypes.String, ""},
		{"text", arrow.BinaryTypes.String, ""},
		{"STRING", arrow.BinaryTypes.String, ""},
		{"DATE", arrow.FixedWidthTypes.Date32, ""},
		{"timestamp", &arrow.TimestampType{Unit: arrow.Microsecond}, ""},
		{"BOOLEAN", arrow.FixedWidthTypes.Boolean, ""},
		{"bool", arrow.FixedWidthTypes.Boolean, ""},
		{"BLOB", nil, `unknown column type "BLOB"`},
		{"DECIMAL(40,2)", nil, "precision"},
		{"DECIMAL(5,6)", nil, "scale"},
		{"DECIMAL(5,x)", nil, "bad type argument"},
		{"INT(3)", nil, "no arguments"},
		{"VARCHAR(10", nil, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !arrow.TypeEqual(got, tt.want) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}
