package zstdx

import "fmt"

// Sequence codes (RFC 8878 §3.1.1.3.2.1.1): each literal length, match length and
// offset code stands for a baseline and a number of extra bits read from the
// stream.
const (
	maxLLCode = 35
	maxMLCode = 52
	maxOFCode = 31
	maxLLLog  = 9
	maxMLLog  = 9
	maxOFLog  = 8
)

var llBase = [maxLLCode + 1]uint32{
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
	8192, 16384, 32768, 65536,
}

var llBits = [maxLLCode + 1]uint8{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16,
}

var mlBase = [maxMLCode + 1]uint32{
	3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
	19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
	35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
	4099, 8195, 16387, 32771, 65539,
}

var mlBits = [maxMLCode + 1]uint8{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
	12, 13, 14, 15, 16,
}

// Predefined distributions (RFC 8878 §3.1.1.3.2.2).
var (
	llDefault = []int16{4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
		-1, -1, -1, -1}
	mlDefault = []int16{1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
		-1, -1, -1, -1, -1}
	ofDefault = []int16{1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1}
)

// predefined tables, built once.
var llPredef, mlPredef, ofPredef = mustTable(llDefault, 6), mustTable(mlDefault, 6), mustTable(ofDefault, 5)

func mustTable(counts []int16, log uint8) *fseTable {
	t := &fseTable{}
	if err := t.build(counts, len(counts), log); err != nil {
		panic(err) // the predefined distributions are constants
	}
	return t
}

// seqTables holds the FSE tables a frame's blocks define for their sequences
// (storage), and for each field the table the last block used (for the repeat
// mode; nil at a frame's start).
type seqTables struct {
	ll, ml, of             fseTable
	llPrev, mlPrev, ofPrev *fseTable
}

// readMode sets up the table of one field for a block: mode 0 predefined, 1 RLE,
// 2 FSE table description, 3 repeat. *prev becomes the block's table. It
// returns the bytes of in it used.
func readMode(in []byte, mode byte, own *fseTable, prev **fseTable, predef *fseTable, maxSym int, maxLog uint8, name string) (int, error) {
	switch mode {
	case 0:
		*prev = predef
		return 0, nil
	case 1:
		if len(in) < 1 {
			return 0, fmt.Errorf("%w: %s: RLE mode without its symbol", ErrCorrupt, name)
		}
		if int(in[0]) > maxSym {
			return 0, fmt.Errorf("%w: %s: RLE symbol %d above %d", ErrCorrupt, name, in[0], maxSym)
		}
		if cap(own.cells) < 1 {
			own.cells = make([]fseEntry, 1, 1<<maxLog)
		}
		own.cells = own.cells[:1]
		own.cells[0] = fseEntry{symbol: in[0]}
		own.log = 0
		*prev = own
		return 1, nil
	case 2:
		var counts [maxMLCode + 1]int16
		n, log, used, err := readFSECounts(in, maxSym, maxLog, counts[:])
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if err := own.build(counts[:], n, log); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		*prev = own
		return used, nil
	default:
		if *prev == nil {
			return 0, fmt.Errorf("%w: %s: repeat mode with no earlier table in the frame", ErrCorrupt, name)
		}
		return 0, nil
	}
}
