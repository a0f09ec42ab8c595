{{ config(materialized='view') }}
select id, name from {{ ref('customers') }} where city = 'berlin'
