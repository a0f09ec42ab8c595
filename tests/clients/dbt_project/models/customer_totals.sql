{{ config(materialized='table') }}
select c.id, c.name, sum(o.amount) as total
from {{ ref('customers') }} c join {{ ref('orders') }} o on o.customer_id = c.id
group by c.id, c.name
