"""What the migrations make of an empty SQLite database (written by
``python -m dreamlake.controlplane.dbsnapshot_make``; do not edit).

``DIGEST`` is the digest of the migration files it was made from; while they
still have it, a fresh SQLite database is made from these statements."""

DIGEST = '7b74f14256517be72b2746afecb605ed0c9ab20e6645f6bce75541f65f5d6850'
HEADS = (
    '0003_fleet',
    '0004_secret_key_ids',
    '0006_token_roots',
    '0101_launch_tracking',
    '0110_capacity',
    '0200_token_scopes',
)
STATEMENTS = (
    'CREATE TABLE alembic_version (\n\tversion_num VARCHAR(32) NOT NULL, \n\tCONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n)',
    'CREATE TABLE namespaces (\n\tid INTEGER NOT NULL, \n\tname VARCHAR(63) NOT NULL, \n\torg_id VARCHAR(128), \n\tcreated_at DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tUNIQUE (name)\n)',
    'CREATE INDEX ix_namespaces_org_id ON namespaces (org_id)',
    "CREATE TABLE tokens (\n\tid INTEGER NOT NULL, \n\ttoken_hash VARCHAR(64) NOT NULL, \n\tnamespace_id INTEGER, \n\tadmin BOOLEAN NOT NULL, \n\tlabel VARCHAR(200), \n\tcreated_at DATETIME NOT NULL, \n\trevoked_at DATETIME, scope VARCHAR(16) DEFAULT 'namespace' NOT NULL, provider_name VARCHAR(63), instance_id VARCHAR(255), host VARCHAR(255), root_token_id INTEGER, expires_at DATETIME, \n\tPRIMARY KEY (id), \n\tUNIQUE (token_hash), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)",
    'CREATE INDEX ix_tokens_namespace_id ON tokens (namespace_id)',
    'CREATE TABLE work_items (\n\tid VARCHAR(36) NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tprovider_name VARCHAR(63) NOT NULL, \n\tqueue VARCHAR(63), \n\tcommand TEXT NOT NULL, \n\ttimeout_seconds FLOAT, \n\tstate VARCHAR(16) NOT NULL, \n\tworker_id VARCHAR(36), \n\texit_code INTEGER, \n\toutput_tail TEXT, \n\terror TEXT, \n\tcreated_at DATETIME NOT NULL, \n\tstarted_at DATETIME, \n\tfinished_at DATETIME, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE, \n\tFOREIGN KEY(worker_id) REFERENCES workers (id) ON DELETE SET NULL\n)',
    'CREATE INDEX ix_work_items_namespace_id ON work_items (namespace_id)',
    'CREATE INDEX ix_work_items_provider_name ON work_items (provider_name)',
    'CREATE INDEX ix_work_items_state ON work_items (state)',
    'CREATE INDEX ix_tokens_provider_name ON tokens (provider_name)',
    'CREATE TABLE providers (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n\tkind VARCHAR(63) NOT NULL, \n\tconfig JSON NOT NULL, \n\thidden BOOLEAN NOT NULL, \n\tdeleted_at DATETIME, \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, identity VARCHAR(64), observed JSON, observed_at DATETIME, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_providers_namespace_name UNIQUE (namespace_id, name), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_providers_namespace_id ON providers (namespace_id)',
    'CREATE TABLE secrets (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n\tkind VARCHAR(32) NOT NULL, \n\tciphertext TEXT NOT NULL, \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, key_id VARCHAR(32), \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_secrets_namespace_name UNIQUE (namespace_id, name), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_secrets_namespace_id ON secrets (namespace_id)',
    'CREATE TABLE modes (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n\tbackend VARCHAR(63) NOT NULL, \n\trunner VARCHAR(63) NOT NULL, \n\timage VARCHAR(1024), \n\ttags JSON, \n\tresources JSON, \n\tenv JSON, \n\ttimeout_s FLOAT, \n\tprovider VARCHAR(255), \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_modes_namespace_name UNIQUE (namespace_id, name), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_modes_namespace_id ON modes (namespace_id)',
    'CREATE TABLE launch_requests (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tclient_token VARCHAR(64) NOT NULL, \n\tprovider_name VARCHAR(255) NOT NULL, \n\tlauncher VARCHAR(63) NOT NULL, \n\tstate VARCHAR(16) NOT NULL, \n\tresult JSON, \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_launch_requests_token UNIQUE (namespace_id, client_token), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_launch_requests_namespace_id ON launch_requests (namespace_id)',
    'CREATE TABLE queues (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tname VARCHAR(63) NOT NULL, \n\tprovider_name VARCHAR(255) NOT NULL, \n\tmode VARCHAR(255), \n\tmin_workers INTEGER NOT NULL, \n\tmax_workers INTEGER NOT NULL, \n\tidle_seconds FLOAT NOT NULL, \n\tidle_action VARCHAR(16) NOT NULL, \n\tserver_url VARCHAR(1024) NOT NULL, \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, providers JSON, strategy VARCHAR(16), \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_queues_namespace_name UNIQUE (namespace_id, name), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_queues_namespace_id ON queues (namespace_id)',
    'CREATE TABLE queue_events (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tqueue VARCHAR(63) NOT NULL, \n\taction VARCHAR(32) NOT NULL, \n\tdetail TEXT NOT NULL, \n\tholder VARCHAR(128) NOT NULL, \n\tat DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_queue_events_namespace_id ON queue_events (namespace_id)',
    'CREATE INDEX ix_queue_events_queue ON queue_events (queue)',
    'CREATE TABLE leases (\n\tname VARCHAR(63) NOT NULL, \n\tholder VARCHAR(128) NOT NULL, \n\texpires_at DATETIME NOT NULL, \n\tPRIMARY KEY (name)\n)',
    'CREATE TABLE capacity_leases (\n\tid VARCHAR(40) NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tstate VARCHAR(16) NOT NULL, \n\tslot VARCHAR(400), \n\tprovider_name VARCHAR(255), \n\toffer VARCHAR(255), \n\tvia VARCHAR(16), \n\tworker_id VARCHAR(36), \n\tinstance_id VARCHAR(255), \n\tlaunched INTEGER NOT NULL, \n\trequest JSON NOT NULL, \n\tdecision JSON, \n\treason TEXT, \n\tttl_seconds FLOAT NOT NULL, \n\tcreated_at DATETIME NOT NULL, \n\tgranted_at DATETIME, \n\texpires_at DATETIME NOT NULL, \n\tended_at DATETIME, \n\tupdated_at DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE, \n\tUNIQUE (slot)\n)',
    'CREATE INDEX ix_capacity_leases_state ON capacity_leases (state)',
    'CREATE INDEX ix_capacity_leases_namespace_id ON capacity_leases (namespace_id)',
    'CREATE INDEX ix_capacity_leases_expires_at ON capacity_leases (expires_at)',
    'CREATE TABLE capacity_backoffs (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tprovider_name VARCHAR(255) NOT NULL, \n\treason TEXT NOT NULL, \n\tfailures INTEGER NOT NULL, \n\tuntil DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_capacity_backoffs_provider UNIQUE (namespace_id, provider_name), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_capacity_backoffs_namespace_id ON capacity_backoffs (namespace_id)',
    'CREATE TABLE capacity_prices (\n\tnamespace_id INTEGER NOT NULL, \n\tprices JSON NOT NULL, \n\tupdated_at DATETIME NOT NULL, \n\tPRIMARY KEY (namespace_id), \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE TABLE "instances" (\n\tid INTEGER NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tprovider_name VARCHAR(255) NOT NULL, \n\tlauncher VARCHAR(63) NOT NULL, \n\tinstance_id VARCHAR(255) NOT NULL, \n\tclient_token VARCHAR(64) NOT NULL, \n\tqueue VARCHAR(63), \n\tstate VARCHAR(32) NOT NULL, \n\ttoken_id INTEGER, \n\tdetails JSON NOT NULL, \n\tcreated_at DATETIME NOT NULL, \n\tupdated_at DATETIME NOT NULL, \n\tterminated_at DATETIME, \n\tstarted_at DATETIME, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(token_id) REFERENCES tokens (id) ON DELETE SET NULL, \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_instances_provider_name ON instances (provider_name)',
    'CREATE INDEX ix_instances_namespace_id ON instances (namespace_id)',
    'CREATE UNIQUE INDEX uq_instances_live_id ON instances (namespace_id, provider_name, instance_id) WHERE terminated_at IS NULL',
    'CREATE TABLE "workers" (\n\tid VARCHAR(36) NOT NULL, \n\tnamespace_id INTEGER NOT NULL, \n\tprovider_name VARCHAR(63) NOT NULL, \n\tinstance_id VARCHAR(255) NOT NULL, \n\thost VARCHAR(255) NOT NULL, \n\tqueues JSON NOT NULL, \n\tversion VARCHAR(64) NOT NULL, \n\tregistered_at DATETIME NOT NULL, \n\tlast_seen DATETIME NOT NULL, \n\tpolled_at DATETIME, \n\tderegistered_at DATETIME, \n\ttoken_id INTEGER, identity VARCHAR(64), \n\tPRIMARY KEY (id), \n\tCONSTRAINT fk_workers_token_id FOREIGN KEY(token_id) REFERENCES tokens (id) ON DELETE SET NULL, \n\tFOREIGN KEY(namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE, \n\tUNIQUE (namespace_id, provider_name, instance_id)\n)',
    'CREATE INDEX ix_workers_namespace_id ON workers (namespace_id)',
    'CREATE INDEX ix_workers_provider_name ON workers (provider_name)',
    'CREATE INDEX ix_tokens_root_token_id ON tokens (root_token_id)',
    'CREATE TABLE server_meta (\n\t"key" VARCHAR(64) NOT NULL, \n\tvalue TEXT NOT NULL, \n\tPRIMARY KEY ("key")\n)',
)
