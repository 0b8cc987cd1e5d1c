package health

import "sort"

// DeletedFile is what the log records about a live file's deleted rows: its
// physical row count (numRecords) and how many of those its deletion vector marks
// deleted.
type DeletedFile struct {
	Path        string  `json:"path"`
	Size        int64   `json:"size"`
	Rows        int64   `json:"rows"`
	DeletedRows int64   `json:"deletedRows"`
	Ratio       float64 `json:"deletedRowsRatio"`
	// Purge is true when Ratio is above the table's purge threshold.
	Purge bool `json:"purge"`
}

// DeletionDebt is a table's deletion-vector debt: rows deleted by deletion vectors
// but still stored in data files, which every scan reads and drops again until a
// rewrite purges them.
type DeletionDebt struct {
	// Rows counts the physical rows of the live files whose row count the log
	// records; DeletedRows those of them marked deleted; Ratio is their share.
	Rows        int64   `json:"rows"`
	DeletedRows int64   `json:"deletedRows"`
	Ratio       float64 `json:"deletedRowsRatio"`
	// Files and Bytes count the files that have deleted rows.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Threshold is the table's skiplake.optimize.maxDeletedRowsRatio; PurgeFiles,
	// PurgeBytes and PurgeDeletedRows count the files above it, which OPTIMIZE and
	// maintain purge.
	Threshold        float64 `json:"maxDeletedRowsRatio"`
	PurgeFiles       int     `json:"purgeFiles"`
	PurgeBytes       int64   `json:"purgeBytes"`
	PurgeDeletedRows int64   `json:"purgeDeletedRows"`
	// PerFile lists the files with deleted rows, the highest share first (then by
	// path).
	PerFile []DeletedFile `json:"perFile,omitempty"`
}

// OverThreshold reports whether deleted of rows is above the purge threshold: the
// rule OPTIMIZE applies (deleted > threshold × rows, rows known and positive).
func OverThreshold(rows, deleted int64, threshold float64) bool {
	return rows > 0 && deleted > 0 && float64(deleted) > threshold*float64(rows)
}

// Deletions sums the deletion-vector debt of files (those without deleted rows
// count towards Rows only) against the purge threshold.
func Deletions(files []DeletedFile, threshold float64) DeletionDebt {
	d := DeletionDebt{Threshold: threshold}
	for _, f := range files {
		if f.Rows <= 0 {
			continue
		}
		d.Rows += f.Rows
		if f.DeletedRows <= 0 {
			continue
		}
		f.Ratio = float64(f.DeletedRows) / float64(f.Rows)
		f.Purge = OverThreshold(f.Rows, f.DeletedRows, threshold)
		d.DeletedRows += f.DeletedRows
		d.Files++
		d.Bytes += f.Size
		if f.Purge {
			d.PurgeFiles++
			d.PurgeBytes += f.Size
			d.PurgeDeletedRows += f.DeletedRows
		}
		d.PerFile = append(d.PerFile, f)
	}
	if d.Rows > 0 {
		d.Ratio = float64(d.DeletedRows) / float64(d.Rows)
	}
	sort.SliceStable(d.PerFile, func(i, j int) bool {
		if d.PerFile[i].Ratio != d.PerFile[j].Ratio {
			return d.PerFile[i].Ratio > d.PerFile[j].Ratio
		}
		return d.PerFile[i].Path < d.PerFile[j].Path
	})
	return d
}
