// Package xctrace reads Instruments traces as `xcrun xctrace export` writes them
// (decision 0062), natively and streaming, on every host: the XML export of a trace's
// tables (Decode, into a tracemodel.Sink), and the table of contents an export of a
// .trace bundle starts with (Runs). IsExport and IsDirectory sniff an export's first
// bytes and a bundle's top-level entries.
//
// An xctrace export is the XML `xcrun xctrace export --xpath` writes for the tables of an
// Instruments trace:
//
//	<trace-query-result>
//	  <node xpath='//trace-toc[1]/run[1]/data[1]/table[31]'>
//	    <schema name="device-thermal-state-intervals">
//	      <col><mnemonic>start</mnemonic><name>Start</name><engineering-type>start-time</engineering-type></col>
//	      <col><mnemonic>duration</mnemonic>...<engineering-type>duration</engineering-type></col> ...
//	    </schema>
//	    <row><start-time id="1" fmt="00:00.000.000">0</start-time><duration id="2" fmt="4.53 s">4531561613</duration>...</row>
//	    <row><start-time ref="3"/><duration ref="2"/><sentinel/>...</row>
//	  </node>
//	</trace-query-result>
//
// A row's children are its column values in schema order. A value written once carries
// an id; a later value equal to it is an element of the same name with ref="id" and
// nothing else, which may point to a value nested in another (a thread's process). A
// <sentinel/> is a null. Times are integer nanoseconds from the start of the run, and an
// element's fmt attribute is the text Instruments shows for it.
//
// Decode reads one export streaming: the rows of a table whose schema has a start
// (engineering type start-time) and a duration become slices; the rows of a table with a
// time but no duration (samples, signpost events) are counted as instants; the rest are
// counted as events only. Its memory is the interned values (bounded by MaxValues and
// MaxValueBytes) and the tracks, not the rows.
//
// It imports the trace model and providers (the typed errors), never providers/trace,
// whose format table opens xctrace sources with it and which runs xcrun xctrace to
// export a bundle (decision 0064). Its tests read the fixtures of
// providers/trace/testdata/xctrace (PROVENANCE.md there), which the family's tests share.
//
// Files, by what they own:
//
//	decode.go  Decode, Limits, DefaultLimits, Info; the reader: tokens, bounds, the
//	           document's trace-query-result and node elements
//	tables.go  Table, TableKind: a node's schema, its columns and the roles found in
//	           them (start, duration, thread, process, label)
//	values.go  a value element: ids interned and references resolved, threads and
//	           processes, backtraces read past
//	rows.go    a row's values, its slice and the track it is on
//	toc.go     Runs: the runs of an exported table of contents
//	sniff.go   IsExport, IsDirectory: the detectors' tests
package xctrace
