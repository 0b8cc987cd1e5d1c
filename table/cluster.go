package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/log"
)

// alterClustering commits new clustering columns (ALTER TABLE CLUSTER BY): the
// delta.clustering domain, and the clustering feature when the table is not
// clustered yet. No data file is read or written.
func alterClustering(ctx context.Context, snap *Snapshot, cols []string) (*AlterResult, error) {
	ls := snap.log
	old, err := snap.view.Clustering()
	if err != nil {
		return nil, err
	}
	if old != nil && old.Feature == log.FeatureLiquid {
		return nil, fmt.Errorf("%w: the table uses the clustering preview of Databricks (table feature %q, domain %s); skiplake keeps its clustering columns as they are",
			ErrInvalidArgument, log.FeatureLiquid, log.DomainLiquid)
	}
	logical, physical, err := resolveClustering(ls.Metadata(), cols)
	if err != nil {
		return nil, err
	}
	// Columns that were not clustering columns before need statistics in every file.
	var added, addedPhys [][]string
	for i, c := range logical {
		known := false
		if old != nil {
			for _, o := range old.Columns {
				known = known || strings.EqualFold(strings.Join(o, "\x00"), strings.Join(c, "\x00"))
			}
		}
		if !known {
			added, addedPhys = append(added, c), append(addedPhys, physical[i])
		}
	}
	missing, n := ls.ClusteringColumnsLackingStats(addedPhys, 5)
	if n > 0 {
		names := make([]string, len(added))
		for i, c := range added {
			names[i] = strings.Join(c, ".")
		}
		return nil, fmt.Errorf("%w: %d file(s) have no statistics for %s (%s%s); run OPTIMIZE to rewrite them with statistics, then change the clustering columns",
			ErrMissingStats, n, strings.Join(names, ", "), strings.Join(missing, ", "), moreSuffix(n, len(missing)))
	}
	proto := ls.Protocol()
	if old == nil {
		if proto, err = log.UpgradeProtocol(proto, 0, 0, log.FeatureClustering); err != nil {
			return nil, err
		}
	}
	txn := ls.NewTransaction(log.TxnOptions{})
	txn.SetDomainMetadata(log.ClusteringDomain(physical))
	oldNames := ""
	if old != nil {
		oldNames = strings.Join(old.Names(), ",")
	}
	newNames := make([]string, len(logical))
	for i, c := range logical {
		newNames[i] = strings.Join(c, ".")
	}
	info := log.CommitInfo{Operation: "CLUSTER BY", OperationParameters: map[string]string{
		"oldClusteringColumns": paramString(oldNames), "newClusteringColumns": paramString(strings.Join(newNames, ",")),
	}}
	return commitAlter(ctx, txn, ls.Protocol(), proto, info)
}

func moreSuffix(total, shown int) string {
	if total > shown {
		return fmt.Sprintf(" and %d more", total-shown)
	}
	return ""
}

// ClusteringColumns returns the snapshot's clustering columns (dotted names), or nil
// when the table is not clustered. A clustering domain that does not parse is an
// error.
func (s *Snapshot) ClusteringColumns() ([]string, error) {
	c, err := s.log.Clustering()
	if err != nil || c == nil {
		return nil, err
	}
	names := c.Names()
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// resolveClustering checks clustering columns for a table with metadata md (see
// log.ResolveClusteringColumns): top-level columns, or primitive leaves reached
// through structs (st.x, stored as ["st","x"]); leaves inside arrays or maps, and
// structs themselves, are refused.
func resolveClustering(md log.Metadata, cols []string) (logical, physical [][]string, err error) {
	logical, physical, err = log.ResolveClusteringColumns(md, cols)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return logical, physical, nil
}
