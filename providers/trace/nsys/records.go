package nsys

// OptInt is an integer column's value that may be null (SQL's NULL, Parquet's null);
// a null is always the zero OptInt, so that two nulls compare equal.
type OptInt struct {
	n  int64
	ok bool
}

// some is the non-null n.
func some(n int64) OptInt { return OptInt{n: n, ok: true} }

// Get is the value, and whether it is not null.
func (o OptInt) Get() (int64, bool) { return o.n, o.ok }

// Ptr is a copy of the value, nil when it is null.
func (o OptInt) Ptr() *int64 {
	if !o.ok {
		return nil
	}
	n := o.n
	return &n
}

// OptStr is a string column's value that may be null.
type OptStr struct {
	s  string
	ok bool
}

// Ptr is a copy of the value, nil when it is null.
func (o OptStr) Ptr() *string {
	if !o.ok {
		return nil
	}
	s := o.s
	return &s
}
