-- PostgreSQL roles of records (run once per database by its administrator, psql -v):
--   psql -v migrator_password="'...'" -v app_password="'...'" -d paiju -f deploy/sql/roles.sql
-- paiju_migrator owns the schema and runs the migrations (the Job records-migrate, Secret
-- paiju-migrate); paiju is the services' role (Secret paiju-secrets, key database-url): rows
-- only, no CREATE, ALTER or DROP. Tables the migrator creates later are granted to paiju by
-- the default privileges below, so a migration needs no extra grant.
-- tests/unit/records/test_records_migrate.py runs this file against a real PostgreSQL.
CREATE ROLE paiju_migrator LOGIN PASSWORD :migrator_password;
CREATE ROLE paiju LOGIN PASSWORD :app_password;

-- the public schema belongs to the migrator; nobody else may create in it
ALTER SCHEMA public OWNER TO paiju_migrator;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO paiju;

-- rows and sequences, for every table the migrator has made and will make
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO paiju;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO paiju;
ALTER DEFAULT PRIVILEGES FOR ROLE paiju_migrator IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO paiju;
ALTER DEFAULT PRIVILEGES FOR ROLE paiju_migrator IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO paiju;
