DROP TABLE project_model_costs;
ALTER TABLE sessions DROP COLUMN model_cost_usd;
