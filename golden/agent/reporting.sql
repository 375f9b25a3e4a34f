-- The reporting database the agent golden tasks query through sql_readonly (only `spend` is allow-listed).
CREATE TABLE spend (department TEXT NOT NULL, quarter TEXT NOT NULL, amount INTEGER NOT NULL);
INSERT INTO spend VALUES ('Parks', '2026-Q1', 42000), ('Parks', '2026-Q2', 38500),
                         ('Library', '2026-Q1', 12000), ('Library', '2026-Q2', 15500),
                         ('Roads', '2026-Q1', 131000), ('Roads', '2026-Q2', 97250);
CREATE TABLE payroll (name TEXT NOT NULL, salary INTEGER NOT NULL);
INSERT INTO payroll VALUES ('Dana Whitfield', 99000), ('Sam Okafor', 121500);
