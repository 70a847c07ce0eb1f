package controller

// The Events' reasons.
const (
	EventObjectFailed       = "ObjectNotMigrated"
	EventMigrationSucceeded = "MigrationSucceeded"
	EventMigrationFailed    = "MigrationFailed"
	EventStoredVersions     = "StoredVersionsTrimmed"
	EventGuardMoved         = "StorageVersionGuardMoved"
)
