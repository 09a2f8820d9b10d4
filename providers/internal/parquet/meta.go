package parquet

// The footer's structures, as parquet.thrift declares them, reduced to the fields this
// package reads.

// Type is a physical type.
type Type int32

// The physical types.
const (
	Boolean           Type = 0
	Int32             Type = 1
	Int64             Type = 2
	Int96             Type = 3
	Float             Type = 4
	Double            Type = 5
	ByteArray         Type = 6
	FixedLenByteArray Type = 7
)

var typeNames = [...]string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}

func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "UNKNOWN"
}

// Repetition is a field's repetition.
type Repetition int32

// The repetitions.
const (
	Required Repetition = 0
	Optional Repetition = 1
	Repeated Repetition = 2
)

// ConvertedType is the deprecated annotation of a field; NoConvertedType when absent.
type ConvertedType int32

// The converted types this package interprets.
const (
	NoConvertedType ConvertedType = -1
	UTF8            ConvertedType = 0
	MapConverted    ConvertedType = 1
	MapKeyValue     ConvertedType = 2
	ListConverted   ConvertedType = 3
	EnumConverted   ConvertedType = 4
	DecimalConv     ConvertedType = 5
	DateConverted   ConvertedType = 6
	TimeMillis      ConvertedType = 7
	TimeMicros      ConvertedType = 8
	TimestampMillis ConvertedType = 9
	TimestampMicros ConvertedType = 10
	Uint8           ConvertedType = 11
	Uint16          ConvertedType = 12
	Uint32          ConvertedType = 13
	Uint64          ConvertedType = 14
	Int8            ConvertedType = 15
	Int16           ConvertedType = 16
	Int32Converted  ConvertedType = 17
	Int64Converted  ConvertedType = 18
	JSONConverted   ConvertedType = 19
	BSONConverted   ConvertedType = 20
	Interval        ConvertedType = 21
)

// LogicalKind is the kind of a field's logical type (the LogicalType union's member);
// NoLogical when absent.
type LogicalKind int8

// The logical kinds, numbered as the union's fields.
const (
	NoLogical LogicalKind = 0
	String    LogicalKind = 1
	Map       LogicalKind = 2
	List      LogicalKind = 3
	Enum      LogicalKind = 4
	Decimal   LogicalKind = 5
	Date      LogicalKind = 6
	Time      LogicalKind = 7
	Timestamp LogicalKind = 8
	Integer   LogicalKind = 10
	Unknown   LogicalKind = 11
	JSON      LogicalKind = 12
	BSON      LogicalKind = 13
	UUID      LogicalKind = 14
	Float16   LogicalKind = 15
	Variant   LogicalKind = 16
	Geometry  LogicalKind = 17
	Geography LogicalKind = 18
)

// TimeUnit is the unit of a TIME or TIMESTAMP logical type.
type TimeUnit int8

// The time units; NoUnit when the file names none this package knows.
const (
	NoUnit TimeUnit = iota
	Millis
	Micros
	Nanos
)

// LogicalType is a field's logical type: its kind and the parameters of that kind.
type LogicalType struct {
	Kind             LogicalKind
	BitWidth         int8 // Integer
	Signed           bool // Integer
	Unit             TimeUnit
	AdjustedToUTC    bool  // Time, Timestamp
	Scale, Precision int32 // Decimal
}

// Codec is a column chunk's compression codec.
type Codec int32

// The codecs.
const (
	Uncompressed Codec = 0
	Snappy       Codec = 1
	Gzip         Codec = 2
	LZO          Codec = 3
	Brotli       Codec = 4
	LZ4          Codec = 5
	Zstd         Codec = 6
	LZ4Raw       Codec = 7
)

var codecNames = [...]string{"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"}

func (c Codec) String() string {
	if c >= 0 && int(c) < len(codecNames) {
		return codecNames[c]
	}
	return "UNKNOWN"
}

// Encoding is a page's encoding.
type Encoding int32

// The encodings.
const (
	Plain                Encoding = 0
	PlainDictionary      Encoding = 2
	RLE                  Encoding = 3
	BitPacked            Encoding = 4
	DeltaBinaryPacked    Encoding = 5
	DeltaLengthByteArray Encoding = 6
	DeltaByteArray       Encoding = 7
	RLEDictionary        Encoding = 8
	ByteStreamSplit      Encoding = 9
)

// ColumnChunk is the footer's description of one column of one row group.
type ColumnChunk struct {
	Codec                 Codec
	Encodings             []Encoding
	NumValues             int64
	TotalUncompressedSize int64 // pages with their headers, decompressed, as declared
	TotalCompressedSize   int64
	DataPageOffset        int64
	DictionaryPageOffset  int64 // 0 when absent
	external              bool  // the chunk lives in another file (file_path)
	hasMeta               bool
}

// RowGroup is one row group: its rows and a column chunk per leaf column.
type RowGroup struct {
	NumRows int64
	Columns []ColumnChunk
}

// schemaElement is one SchemaElement of the footer's flattened schema.
type schemaElement struct {
	typ         Type
	hasType     bool
	typeLength  int32
	repetition  Repetition
	name        string
	numChildren int32
	converted   ConvertedType
	scale       int32
	precision   int32
	logical     LogicalType
}

// fileMeta is the FileMetaData fields this package reads.
type fileMeta struct {
	schema    []schemaElement
	numRows   int64
	rowGroups []RowGroup
}

func decodeFileMeta(b []byte) (*fileMeta, error) {
	t := &thrift{b: b}
	m := &fileMeta{}
	err := t.fields(func(id int16, typ byte) error {
		switch id {
		case 2:
			return t.readList(typ, func(et byte) error {
				e := schemaElement{converted: NoConvertedType}
				err := t.readStruct(et, func(id int16, typ byte) error { return e.field(t, id, typ) })
				m.schema = append(m.schema, e)
				return err
			})
		case 3:
			return t.readI64(typ, &m.numRows)
		case 4:
			return t.readList(typ, func(et byte) error {
				var g RowGroup
				err := t.readStruct(et, func(id int16, typ byte) error { return g.field(t, id, typ) })
				m.rowGroups = append(m.rowGroups, g)
				return err
			})
		}
		return t.skip(typ)
	})
	return m, err
}

func (e *schemaElement) field(t *thrift, id int16, typ byte) error {
	switch id {
	case 1:
		e.hasType = true
		return t.readI32(typ, (*int32)(&e.typ))
	case 2:
		return t.readI32(typ, &e.typeLength)
	case 3:
		return t.readI32(typ, (*int32)(&e.repetition))
	case 4:
		return t.readString(typ, &e.name)
	case 5:
		return t.readI32(typ, &e.numChildren)
	case 6:
		return t.readI32(typ, (*int32)(&e.converted))
	case 7:
		return t.readI32(typ, &e.scale)
	case 8:
		return t.readI32(typ, &e.precision)
	case 10:
		return t.readStruct(typ, func(id int16, typ byte) error { return e.logical.member(t, id, typ) })
	}
	return t.skip(typ)
}

// member reads one member of the LogicalType union.
func (l *LogicalType) member(t *thrift, id int16, typ byte) error {
	if typ != tStruct {
		return t.skip(typ)
	}
	switch LogicalKind(id) {
	case String, Map, List, Enum, Date, Unknown, JSON, BSON, UUID, Float16, Variant, Geometry, Geography:
		l.Kind = LogicalKind(id)
		return t.skip(typ)
	case Decimal:
		l.Kind = Decimal
		return t.fields(func(id int16, typ byte) error {
			switch id {
			case 1:
				return t.readI32(typ, &l.Scale)
			case 2:
				return t.readI32(typ, &l.Precision)
			}
			return t.skip(typ)
		})
	case Time, Timestamp:
		l.Kind = LogicalKind(id)
		return t.fields(func(id int16, typ byte) error {
			switch id {
			case 1:
				return t.readBool(typ, &l.AdjustedToUTC)
			case 2:
				return t.readStruct(typ, func(id int16, typ byte) error {
					if id >= 1 && id <= 3 && typ == tStruct {
						l.Unit = TimeUnit(id)
					}
					return t.skip(typ)
				})
			}
			return t.skip(typ)
		})
	case Integer:
		l.Kind = Integer
		return t.fields(func(id int16, typ byte) error {
			switch id {
			case 1:
				var w int32
				err := t.readI32(typ, &w)
				l.BitWidth = int8(w)
				return err
			case 2:
				return t.readBool(typ, &l.Signed)
			}
			return t.skip(typ)
		})
	}
	return t.skip(typ)
}

func (g *RowGroup) field(t *thrift, id int16, typ byte) error {
	switch id {
	case 1:
		return t.readList(typ, func(et byte) error {
			var c ColumnChunk
			err := t.readStruct(et, func(id int16, typ byte) error {
				switch id {
				case 1:
					var path string
					err := t.readString(typ, &path)
					c.external = path != ""
					return err
				case 3:
					c.hasMeta = typ == tStruct
					return t.readStruct(typ, func(id int16, typ byte) error { return c.meta(t, id, typ) })
				}
				return t.skip(typ)
			})
			g.Columns = append(g.Columns, c)
			return err
		})
	case 3:
		return t.readI64(typ, &g.NumRows)
	}
	return t.skip(typ)
}

// meta reads one field of a ColumnMetaData.
func (c *ColumnChunk) meta(t *thrift, id int16, typ byte) error {
	switch id {
	case 2:
		return t.readList(typ, func(et byte) error {
			var e int32
			err := t.readI32(et, &e)
			c.Encodings = append(c.Encodings, Encoding(e))
			return err
		})
	case 4:
		return t.readI32(typ, (*int32)(&c.Codec))
	case 5:
		return t.readI64(typ, &c.NumValues)
	case 6:
		return t.readI64(typ, &c.TotalUncompressedSize)
	case 7:
		return t.readI64(typ, &c.TotalCompressedSize)
	case 9:
		return t.readI64(typ, &c.DataPageOffset)
	case 11:
		return t.readI64(typ, &c.DictionaryPageOffset)
	}
	return t.skip(typ)
}

// Page types.
const (
	dataPage       = 0
	indexPage      = 1
	dictionaryPage = 2
	dataPageV2     = 3
)

// pageHeader is the PageHeader fields this package reads.
type pageHeader struct {
	typ              int32
	uncompressedSize int32
	compressedSize   int32
	numValues        int32 // data pages and dictionary pages
	numNulls         int32 // v2
	numRows          int32 // v2
	encoding         Encoding
	defEncoding      Encoding // v1
	repEncoding      Encoding // v1
	defBytes         int32    // v2
	repBytes         int32    // v2
	compressed       bool     // v2's is_compressed (default true)
}

func decodePageHeader(b []byte) (pageHeader, int, error) {
	t := &thrift{b: b}
	h := pageHeader{compressed: true, encoding: -1}
	err := t.fields(func(id int16, typ byte) error {
		switch id {
		case 1:
			return t.readI32(typ, &h.typ)
		case 2:
			return t.readI32(typ, &h.uncompressedSize)
		case 3:
			return t.readI32(typ, &h.compressedSize)
		case 5: // DataPageHeader
			return t.readStruct(typ, func(id int16, typ byte) error {
				switch id {
				case 1:
					return t.readI32(typ, &h.numValues)
				case 2:
					return t.readI32(typ, (*int32)(&h.encoding))
				case 3:
					return t.readI32(typ, (*int32)(&h.defEncoding))
				case 4:
					return t.readI32(typ, (*int32)(&h.repEncoding))
				}
				return t.skip(typ)
			})
		case 7: // DictionaryPageHeader
			return t.readStruct(typ, func(id int16, typ byte) error {
				switch id {
				case 1:
					return t.readI32(typ, &h.numValues)
				case 2:
					return t.readI32(typ, (*int32)(&h.encoding))
				}
				return t.skip(typ)
			})
		case 8: // DataPageHeaderV2
			return t.readStruct(typ, func(id int16, typ byte) error {
				switch id {
				case 1:
					return t.readI32(typ, &h.numValues)
				case 2:
					return t.readI32(typ, &h.numNulls)
				case 3:
					return t.readI32(typ, &h.numRows)
				case 4:
					return t.readI32(typ, (*int32)(&h.encoding))
				case 5:
					return t.readI32(typ, &h.defBytes)
				case 6:
					return t.readI32(typ, &h.repBytes)
				case 7:
					return t.readBool(typ, &h.compressed)
				}
				return t.skip(typ)
			})
		}
		return t.skip(typ)
	})
	return h, t.pos, err
}
