DROP TABLE IF EXISTS attachments;
