"""What each page shows, computed in one call per page view: the pages draw these typed results and do nothing else
(no store access, no statistics, no evidence computation of their own).
"""
