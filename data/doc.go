// Package data reads and writes the files the TensorFlow world trains on.
// Its subpackages read the other formats numeric data arrives in: npy
// (NumPy's .npy and .npz), idx (MNIST-style IDX files) and csv (tables
// typed by a schema), each also a Dataset source.
//
// # TFRecord
//
// Reader and Writer speak TFRecord framing (uint64 length, masked CRC-32C
// of the length, data, masked CRC-32C of the data, little-endian), plain or
// GZIP/ZLIB compressed, chosen by option, by file extension, or by sniffing
// the first bytes. Reading streams (files may be larger than memory);
// Reader.Offset and ReadRecordAt give random access to uncompressed files.
// CreateWriter writes atomically: a temporary file, synced and renamed on
// Close.
//
// # Examples
//
// Example and SequenceExample encode and decode tf.train.Example and
// tf.train.SequenceExample, wire-compatible with TensorFlow's protos (via
// google.golang.org/protobuf's protowire), packed or unpacked numbers.
// ExampleJSON and friends give the JSON form of the conformance corpus
// (deprecated: the tfrecord tool's, it moves under data/cmd/tfrecord).
//
// # Errors
//
// Corrupt data is reported, never swallowed: a *RecordError names the file,
// the record index (records read before it) and the byte offset of its
// header, and wraps ErrTruncatedHeader, ErrLengthCRCMismatch,
// ErrTruncatedData or ErrDataCRCMismatch (truncations also wrap
// io.ErrUnexpectedEOF). A clean end of file is io.EOF. ReaderOptions.
// SkipCorrupt passes over records with bad data CRCs and counts them.
// Malformed protos wrap ErrBadProto.
//
// # Concurrency
//
// A Reader or Writer is used by one goroutine at a time. Record slices
// returned by Reader.Next are valid until the next call; decoded bytes
// features alias the record.
//
// # Events
//
// UnmarshalEvent reads TensorBoard event records (wall time, step, file
// version, graphs, summary values).
//
// # The tfrecord command
//
// data/cmd/tfrecord counts, verifies, prints (as JSON lines, the form of
// the conformance corpus) and writes TFRecord files.
//
// # Parsing
//
// A ParseSpec (FixedLen with defaults, VarLen ragged or padded) and its
// Parser turn a batch of serialized Examples into batched tensors straight
// from the wire bytes.
//
// # Datasets
//
// Dataset is a tf.data-style pipeline: FromTensors, FromSlices,
// FromGenerator, Range and TFRecordFiles, transformed by Map (parallel,
// ordered or not), Filter, Shuffle, Batch, PaddedBatch, Unbatch, Repeat,
// Take, Skip, Interleave, Prefetch, Cache (in memory) or CacheFile, Zip
// and Enumerate, and run with
// "for elem, err := range ds.All(ctx)". Errors name their stage
// (*StageError); cancelling the context or leaving the loop stops every
// stage's goroutines: no element is started after, and a user function
// in progress is waited for, so a slow one should take the pipeline's
// context (MapContext, FilterContext, FromGeneratorContext), which is
// cancelled then, and return early. Shuffles depend only on their seed
// (and, reshuffling, on the epoch: a training loop runs epoch e with
// "ds.Epoch(ctx, e)", as nn.Fit does), so a pipeline yields the same order
// on any number of cores.
package data
