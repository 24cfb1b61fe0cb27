DROP TABLE IF EXISTS login_devices;
DROP TABLE IF EXISTS login_address_budget;
