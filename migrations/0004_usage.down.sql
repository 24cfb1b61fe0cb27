DROP TABLE project_usage;
