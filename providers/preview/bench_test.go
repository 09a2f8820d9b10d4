package preview

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/flameox/flameox/generated/contracts"
)

// jsonDoc writes a root-array JSON document of about size bytes.
func jsonDoc(b *testing.B, size int) Source {
	p := filepath.Join(b.TempDir(), "doc.json")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("[")
	n := 1
	for i := 0; n < size; i++ {
		if i > 0 {
			w.WriteString(",\n")
		}
		k, _ := fmt.Fprintf(w, `{"ph":"X","name":"aten::mm","ts":%d,"dur":%d,"pid":1,"tid":%d,"args":{"shape":[[64,64],[64,64]],"seq":%d}}`, 1694039959000000+i, i%1000, i%8, i)
		n += k + 2
	}
	w.WriteString("]\n")
	w.Flush()
	f.Close()
	st, _ := os.Stat(p)
	return Source{Path: p, Format: contracts.FormatJSON, SHA256: "x", Size: st.Size()}
}

// BenchmarkJSONProjection materializes every entry of a 64 MiB document.
func BenchmarkJSONProjection(b *testing.B) {
	src := jsonDoc(b, 64<<20)
	b.SetBytes(src.Size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := openJSON(src, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
}

// BenchmarkJSONSkip skips every entry of a 64 MiB document, as a deep page does.
func BenchmarkJSONSkip(b *testing.B) {
	src := jsonDoc(b, 64<<20)
	b.SetBytes(src.Size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := openJSON(src, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.skip(1 << 62); err != io.EOF {
			b.Fatal(err)
		}
		r.Close()
	}
}
