// Package wire holds the contracts that cross the network between Concord servers and
// their clients, so that both sides compile against one definition:
//
//   - the storage-migration rewrite endpoint (RewritePath, RewriteResult), served by
//     the server and called by the migrator;
//   - the storage version hash that discovery publishes and the migration trigger
//     compares (StorageVersionHash);
//   - how StorageVersion objects are named after the resource they describe
//     (StorageVersionName, ParseStorageVersionName), written by the servers and read
//     by the trigger and the upgrade tools;
//   - what a StorageVersion's status says once its entries change
//     (SetStorageVersionEntries: commonEncodingVersion, the AllEncodingVersionsEqual
//     condition, the encryption keys reported), computed alike by Concord's servers
//     and by the aggregated servers that publish through its API (package
//     storageversion/publisher).
//
// It is a leaf: it imports nothing of Concord, and nothing here does I/O. A change to
// anything in it is a change of protocol between releases that a mixed-version fleet
// runs side by side; keep it compatible.
package wire
